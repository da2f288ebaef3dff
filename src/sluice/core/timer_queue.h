// TimerQueue: runs callbacks at their instant, or at most one tick after it, on one thread of its
// own; a timer can be cancelled until it fires. The decision pipeline arms one per store call that
// leaves the process (its deadline: a store that never answers) and one per server-side wait (the
// retry at retry_after), so thousands of timers in flight cost a map node each and the thread one
// wake-up per tick, not a kernel timer or a wake-up per timer. The thread sleeps until notified
// when no timer has been armed for a while, so an idle queue costs nothing.
//
// Time comes from an injected Clock (SteadyClock in production). Tests pass a ManualClock and
// `Threading::kManual`, move the clock, and call fire_due(): no test sleeps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"
#include "sluice/time.h"

namespace sluice {

class TimerQueue {
 public:
  enum class Threading : std::uint8_t {
    kOwnThread,  // a thread fires due timers every tick
    kManual,     // only fire_due() does (tests)
  };

  // `clock` must outlive the queue. `tick` > 0 bounds how late a timer may fire.
  explicit TimerQueue(const Clock& clock = SteadyClock::instance(),
                      Micros tick = 2 * kMicrosPerMilli,
                      Threading threading = Threading::kOwnThread);
  // Stops the thread. Timers still armed are dropped without running.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Identifies an armed timer for cancel().
  struct Handle {
    Micros when = 0;
    std::uint64_t id = 0;
  };

  // Runs `fire` once at `when` (this clock's time) or within a tick after it, on the queue's
  // thread (with kManual: in fire_due()). `fire` must not block. Thread-safe.
  Handle arm(Micros when, std::function<void()> fire);
  // As arm(now + delay).
  Handle after(Micros delay, std::function<void()> fire);
  // True if the timer had not fired yet and now never will; false once it fired (or is firing).
  // Thread-safe; may be called from inside a callback.
  bool cancel(const Handle& handle);

  // Runs every timer due at the clock's current time, on the calling thread. Returns how many ran.
  std::size_t fire_due();

  const Clock& clock() const { return clock_; }
  // Timers armed and not yet fired or cancelled.
  std::size_t pending() const;

 private:
  using Key = std::pair<Micros, std::uint64_t>;
  void run();

  const Clock& clock_;
  const Micros tick_;
  mutable Mutex mutex_;
  CondVar wake_;
  std::map<Key, std::function<void()>> timers_ SLUICE_GUARDED_BY(mutex_);
  std::uint64_t next_id_ SLUICE_GUARDED_BY(mutex_) = 0;
  bool sleeping_ SLUICE_GUARDED_BY(mutex_) =
      false;  // the thread waits for a notification, not a tick
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace sluice
