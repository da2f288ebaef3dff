// The project's mutexes, shaped for clang's thread-safety analysis (core/thread_annotations.h):
// std::mutex and std::shared_mutex carry no attributes in libstdc++, so members guarded by them
// cannot be checked. These wrap them with the attributes and add nothing at run time.
//
//   Mutex mutex_;
//   std::vector<int> items_ SLUICE_GUARDED_BY(mutex_);
//   void add(int item) { MutexLock lock(mutex_); items_.push_back(item); }
//
// Waiting on a condition: CondVar over a MutexLock. Write the predicate as a loop around
// wait() (`while (!ready_) changed_.wait(lock);`), not as a lambda: the analysis checks a lambda
// as a function of its own that holds no lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "sluice/core/thread_annotations.h"

namespace sluice {

class SLUICE_CAPABILITY("mutex") Mutex {
 public:
  void lock() SLUICE_ACQUIRE() { mutex_.lock(); }
  void unlock() SLUICE_RELEASE() { mutex_.unlock(); }
  bool try_lock() SLUICE_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  // For CondVar, which waits on the standard mutex underneath.
  std::mutex& native() { return mutex_; }

 private:
  std::mutex mutex_;
};

// Readers share it; a writer holds it alone.
class SLUICE_CAPABILITY("shared mutex") SharedMutex {
 public:
  void lock() SLUICE_ACQUIRE() { mutex_.lock(); }
  void unlock() SLUICE_RELEASE() { mutex_.unlock(); }
  void lock_shared() SLUICE_ACQUIRE_SHARED() { mutex_.lock_shared(); }
  void unlock_shared() SLUICE_RELEASE_SHARED() { mutex_.unlock_shared(); }

 private:
  std::shared_mutex mutex_;
};

// Holds a Mutex from construction to destruction; unlock() lets go early, lock() takes it again.
class SLUICE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) SLUICE_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() SLUICE_RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() SLUICE_ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }
  void unlock() SLUICE_RELEASE() {
    held_ = false;
    mutex_.unlock();
  }
  Mutex& mutex() { return mutex_; }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

// Holds a SharedMutex shared (ReaderLock) or alone (WriterLock) for its lifetime.
class SLUICE_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mutex) SLUICE_ACQUIRE_SHARED(mutex) : mutex_(mutex) {
    mutex_.lock_shared();
  }
  ~ReaderLock() SLUICE_RELEASE() { mutex_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mutex_;
};

class SLUICE_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mutex) SLUICE_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~WriterLock() SLUICE_RELEASE() { mutex_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mutex_;
};

// A condition variable waited on under a MutexLock. The lock is held again when a wait returns;
// the analysis treats it as held throughout, which is what the code around the wait sees.
class CondVar {
 public:
  void notify_one() { changed_.notify_one(); }
  void notify_all() { changed_.notify_all(); }

  void wait(MutexLock& lock) {
    std::unique_lock<std::mutex> native(lock.mutex().native(), std::adopt_lock);
    changed_.wait(native);
    native.release();  // the MutexLock owns it again
  }
  // False when `deadline` passed (the caller checks its condition either way).
  template <typename Clock, typename Duration>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline) {
    std::unique_lock<std::mutex> native(lock.mutex().native(), std::adopt_lock);
    const bool woken = changed_.wait_until(native, deadline) == std::cv_status::no_timeout;
    native.release();
    return woken;
  }
  template <typename Rep, typename Period>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout) {
    return wait_until(lock, std::chrono::steady_clock::now() + timeout);
  }

 private:
  std::condition_variable changed_;
};

}  // namespace sluice
