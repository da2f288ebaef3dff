#include "sluice/core/timer_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace sluice {
namespace {

constexpr Micros kStart = 1'000'000;

TEST(TimerQueueTest, FiresEachTimerOnceAtItsInstantNeverBefore) {
  ManualClock clock(kStart);
  TimerQueue timers(clock, kMicrosPerMilli, TimerQueue::Threading::kManual);
  std::vector<int> fired;
  timers.arm(kStart + 10, [&] { fired.push_back(10); });
  timers.arm(kStart + 5, [&] { fired.push_back(5); });
  timers.after(20, [&] { fired.push_back(20); });
  clock.set(kStart + 4);
  EXPECT_EQ(timers.fire_due(), 0u);
  clock.set(kStart + 10);
  EXPECT_EQ(timers.fire_due(), 2u);
  EXPECT_EQ(fired, (std::vector<int>{5, 10}));
  clock.set(kStart + 19);
  EXPECT_EQ(timers.fire_due(), 0u);
  clock.set(kStart + 1'000);
  EXPECT_EQ(timers.fire_due(), 1u);
  EXPECT_EQ(timers.fire_due(), 0u);
  EXPECT_EQ(fired, (std::vector<int>{5, 10, 20}));
  EXPECT_EQ(timers.pending(), 0u);
}

TEST(TimerQueueTest, CancelledTimerNeverFiresAndCancelAfterFiringSaysSo) {
  ManualClock clock(kStart);
  TimerQueue timers(clock, kMicrosPerMilli, TimerQueue::Threading::kManual);
  int fired = 0;
  const TimerQueue::Handle cancelled = timers.after(5, [&] { ++fired; });
  const TimerQueue::Handle kept = timers.after(5, [&] { ++fired; });
  EXPECT_TRUE(timers.cancel(cancelled));
  EXPECT_FALSE(timers.cancel(cancelled));
  clock.advance(5);
  EXPECT_EQ(timers.fire_due(), 1u);
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(timers.cancel(kept));
}

TEST(TimerQueueTest, CallbacksMayArmAndCancelTimers) {
  ManualClock clock(kStart);
  TimerQueue timers(clock, kMicrosPerMilli, TimerQueue::Threading::kManual);
  int chained = 0;
  timers.after(1, [&] {
    ++chained;
    timers.after(1, [&] { ++chained; });
  });
  clock.advance(1);
  EXPECT_EQ(timers.fire_due(), 1u);
  clock.advance(1);
  EXPECT_EQ(timers.fire_due(), 1u);
  EXPECT_EQ(chained, 2);
}

// The queue's own thread fires a timer armed while it sleeps (it is notified), on the real clock.
TEST(TimerQueueTest, OwnThreadFiresTimersArmedFromOtherThreads) {
  TimerQueue timers;  // steady clock, own thread
  std::mutex mutex;
  std::condition_variable done;
  int fired = 0;
  for (int i = 0; i < 3; ++i) {
    timers.after(0, [&] {
      std::lock_guard lock(mutex);
      ++fired;
      done.notify_one();
    });
  }
  std::unique_lock lock(mutex);
  done.wait(lock, [&] { return fired == 3; });
  EXPECT_EQ(fired, 3);
}

}  // namespace
}  // namespace sluice
