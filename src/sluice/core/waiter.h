// sluice::Waiter: a one-shot result slot a blocked thread sleeps on until another thread fills it
// (the Redis client's blocking calls; Rendezvous, under every blocking wrapper of an asynchronous
// call).
//
// Cheaper than a promise or a mutex + condition variable: no allocation, and no wake-up system
// call when the result arrives before the waiter went to sleep. Linux futexes.
//
// A waiter alone in the process (no other blocked caller) may spin a while before it sleeps
// (redis::MultiplexerOptions::blocking_spin, service::LimiterOptions::blocking_spin): a lone caller
// is the latency case (one caller, one call in flight), where the futex wake-up and the scheduler's
// hand-back add a second wake-up to the round trip's one (the I/O thread's). With other waiters
// the cores are better left to them and to the I/O thread, so only the first waiter spins. A
// waiter that never spins (spin 0: a wait for room, which a timer ends) sleeps at once and is not
// counted as another.
// Spinning stops paying when replies take longer than the spin (a distant or slow Redis): after 4
// spins in a row that ended before their reply, only one lone wait in 32 spins, to notice when
// replies are quick again.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "sluice/time.h"

namespace sluice {

// How long a lone blocked caller spins by default, wherever it waits (the Redis client's blocking
// calls, Limiter::block_on): one number, so the library's option sets both alike.
inline constexpr Micros kDefaultBlockingSpin = 150;

// What every Waiter of the process shares (not per Result type): how many wait, and whether
// spinning has been paying.
class WaiterSpin {
 public:
  // Counts the process's waiters that may spin while one waits; `alone`: this one may spin and
  // no other such waiter was waiting when it began. A waiter that never spins (a long wait for
  // room, a caller with the spin off) is not counted: it sleeps, so it leaves the cores to a lone
  // caller's spin.
  struct WaitingCount {
    explicit WaitingCount(bool may_spin)
        : counted(may_spin),
          alone(may_spin && waiting().fetch_add(1, std::memory_order_relaxed) == 0) {}
    ~WaitingCount() {
      if (counted) waiting().fetch_sub(1, std::memory_order_relaxed);
    }
    WaitingCount(const WaitingCount&) = delete;
    WaitingCount& operator=(const WaitingCount&) = delete;
    const bool counted;
    const bool alone;
  };

  static bool worthwhile() {
    if (misses().load(std::memory_order_relaxed) < kMissesBeforeRest) return true;
    return skipped().fetch_add(1, std::memory_order_relaxed) % kProbeEvery == kProbeEvery - 1;
  }

  // A load and a store, not one atomic update: two waiters recording at once (possible only as
  // one finishes and the next begins) may lose a count, which only blurs a heuristic.
  static void record(bool caught) {
    const unsigned missed = misses().load(std::memory_order_relaxed);
    misses().store(caught ? 0 : std::min(missed + 1, kMissesBeforeRest), std::memory_order_relaxed);
  }

 private:
  static constexpr unsigned kMissesBeforeRest = 4;
  static constexpr unsigned kProbeEvery = 32;

  static std::atomic<int>& waiting() {
    static std::atomic<int> count{0};
    return count;
  }
  // Spins in a row that ended before their reply (at most kMissesBeforeRest).
  static std::atomic<unsigned>& misses() {
    static std::atomic<unsigned> count{0};
    return count;
  }
  // Lone waits that skipped spinning, counted to probe every kProbeEvery-th.
  static std::atomic<unsigned>& skipped() {
    static std::atomic<unsigned> count{0};
    return count;
  }
};

template <typename Result>
class Waiter {
 public:
  // Publishes the result and wakes the waiter. After the exchange the waiter may return and
  // destroy this Waiter: the wake-up passes only the address to the kernel (FUTEX_WAKE reads no
  // memory), so it is harmless if the frame is gone; a stray wake is a spurious one to whoever
  // waits there next, which every futex waiter tolerates.
  void set(Result result) {
    result_.emplace(std::move(result));
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) {
      ::syscall(SYS_futex, &state_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }

  // Blocks until set() and returns its result, first spinning up to `spin` µs when no other
  // waiter of the process that may spin is waiting. Once only.
  Result wait(Micros spin = 0) {
    const WaiterSpin::WaitingCount counted(spin > 0);
    if (counted.alone && WaiterSpin::worthwhile()) {
      WaiterSpin::record(spin_for(std::chrono::microseconds(spin)));
    }
    std::uint32_t seen = state_.load(std::memory_order_acquire);
    while (seen != kDone) {
      if (seen == kEmpty &&
          !state_.compare_exchange_strong(seen, kSleeping, std::memory_order_acquire)) {
        continue;  // `seen` now holds what was there (kDone)
      }
      ::syscall(SYS_futex, &state_, FUTEX_WAIT_PRIVATE, kSleeping, nullptr, nullptr, 0);
      seen = state_.load(std::memory_order_acquire);
    }
    return std::move(*result_);
  }

 private:
  // Whether the result came within `budget`; the clock is read every 64 checks.
  bool spin_for(std::chrono::microseconds budget) const {
    const auto until = std::chrono::steady_clock::now() + budget;
    for (unsigned i = 1;; ++i) {
      if (state_.load(std::memory_order_acquire) == kDone) return true;
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }

  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kSleeping = 1;
  static constexpr std::uint32_t kDone = 2;
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

  std::optional<Result> result_;
  std::atomic<std::uint32_t> state_{kEmpty};
};

}  // namespace sluice
