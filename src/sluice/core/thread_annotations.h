// Attributes for clang's thread-safety analysis (-Wthread-safety, on in every clang build): a
// member says which mutex guards it, a function which mutex it needs or must not hold, so the
// compiler rejects an access made without the lock instead of a race being found (or not) by
// TSan at run time. Other compilers see nothing. The mutex types that carry the attributes are in
// core/mutex.h.
#pragma once

#if defined(__clang__)
#define SLUICE_THREAD_ANNOTATION(attribute) __attribute__((attribute))
#else
#define SLUICE_THREAD_ANNOTATION(attribute)
#endif

// On a class: its objects are a capability (a mutex) named `name` in diagnostics.
#define SLUICE_CAPABILITY(name) SLUICE_THREAD_ANNOTATION(capability(name))
// On a class: an RAII object that holds a capability for its lifetime.
#define SLUICE_SCOPED_CAPABILITY SLUICE_THREAD_ANNOTATION(scoped_lockable)

// On a member: read and written only with `mutex` held.
#define SLUICE_GUARDED_BY(mutex) SLUICE_THREAD_ANNOTATION(guarded_by(mutex))
// On a pointer member: what it points to is read and written only with `mutex` held.
#define SLUICE_PT_GUARDED_BY(mutex) SLUICE_THREAD_ANNOTATION(pt_guarded_by(mutex))

// On a function: the caller must hold the mutexes (exclusively, or at least shared).
#define SLUICE_REQUIRES(...) SLUICE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SLUICE_REQUIRES_SHARED(...) \
  SLUICE_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: the caller must not hold the mutexes (the function takes them itself).
#define SLUICE_EXCLUDES(...) SLUICE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On the mutex types' own functions.
#define SLUICE_ACQUIRE(...) SLUICE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SLUICE_ACQUIRE_SHARED(...) SLUICE_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define SLUICE_RELEASE(...) SLUICE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SLUICE_RELEASE_SHARED(...) SLUICE_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define SLUICE_RELEASE_GENERIC(...) \
  SLUICE_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define SLUICE_TRY_ACQUIRE(...) SLUICE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define SLUICE_RETURN_CAPABILITY(mutex) SLUICE_THREAD_ANNOTATION(lock_returned(mutex))

// On a function the analysis cannot follow (say why beside it).
#define SLUICE_NO_THREAD_SAFETY_ANALYSIS SLUICE_THREAD_ANNOTATION(no_thread_safety_analysis)
