// sluice::redis::Waiter: a one-shot result slot a blocked thread sleeps on until another thread
// fills it.
//
// Cheaper than a promise or a mutex + condition variable: no allocation, and no wake-up system
// call when the result arrives before the waiter went to sleep. Linux futexes, as the rest of the
// client's socket handling.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>

namespace sluice::redis {

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

  // Blocks until set() and returns its result. Once only.
  Result wait() {
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
  static constexpr std::uint32_t kEmpty = 0;
  static constexpr std::uint32_t kSleeping = 1;
  static constexpr std::uint32_t kDone = 2;
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

  std::optional<Result> result_;
  std::atomic<std::uint32_t> state_{kEmpty};
};

}  // namespace sluice::redis
