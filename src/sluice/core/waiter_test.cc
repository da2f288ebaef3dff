#include "sluice/core/waiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace sluice {
namespace {

// A spin long enough that a result set from another thread usually arrives during it: the
// test covers both the spinning and the sleeping path whichever way the scheduler falls.
constexpr Micros kLongSpin = 100'000;

TEST(WaiterTest, AResultSetBeforeTheWaitIsReturnedAtOnce) {
  Waiter<int> waiter;
  waiter.set(7);
  EXPECT_EQ(waiter.wait(kLongSpin), 7);
}

TEST(WaiterTest, ALoneWaiterGetsAResultSetWhileItSpins) {
  Waiter<int> waiter;
  std::thread setter([&] { waiter.set(42); });
  EXPECT_EQ(waiter.wait(kLongSpin), 42);
  setter.join();
}

TEST(WaiterTest, WithoutSpinningTheWaiterSleepsUntilTheResult) {
  Waiter<int> waiter;
  std::atomic<bool> waiting{false};
  std::thread setter([&] {
    while (!waiting.load()) std::this_thread::yield();
    waiter.set(5);
  });
  waiting.store(true);
  EXPECT_EQ(waiter.wait(0), 5);
  setter.join();
}

TEST(WaiterTest, OnlyWaitersThatMaySpinCountAgainstALoneWaiter) {
  const WaiterSpin::WaitingCount sleeper(/*may_spin=*/false);  // a long acquire(max_wait)
  const WaiterSpin::WaitingCount first(/*may_spin=*/true);
  EXPECT_TRUE(first.alone);
  const WaiterSpin::WaitingCount second(/*may_spin=*/true);
  EXPECT_FALSE(second.alone);
}

// Many waiters at once: only the first spins, the others sleep; each gets its own result, set
// in the reverse order of the waits, whatever mix of spinning and sleeping that makes.
TEST(WaiterTest, ConcurrentWaitersEachGetTheirOwnResult) {
  constexpr int kWaiters = 16;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<Waiter<int>> waiters(kWaiters);
    std::vector<int> results(kWaiters, -1);
    std::vector<std::thread> threads;
    threads.reserve(kWaiters);
    for (int i = 0; i < kWaiters; ++i) {
      threads.emplace_back([&, i] { results[i] = waiters[i].wait(kLongSpin); });
    }
    for (int i = kWaiters - 1; i >= 0; --i) waiters[i].set(round * kWaiters + i);
    for (std::thread& thread : threads) thread.join();
    for (int i = 0; i < kWaiters; ++i) EXPECT_EQ(results[i], round * kWaiters + i);
  }
}

}  // namespace
}  // namespace sluice
