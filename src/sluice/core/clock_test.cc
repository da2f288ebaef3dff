#include "sluice/core/clock.h"

#include <gtest/gtest.h>

#include <ctime>
#include <thread>
#include <vector>

namespace sluice {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;

TEST(ManualClockTest, StartsAtTheGivenInstant) {
  const ManualClock clock(kEpoch);
  EXPECT_EQ(clock.now(), kEpoch);
  EXPECT_EQ(clock.now(), kEpoch);  // reading does not move it
}

TEST(ManualClockTest, SetMovesToExactlyThatInstantEvenBackwards) {
  ManualClock clock(kEpoch);
  clock.set(kEpoch + 1);
  EXPECT_EQ(clock.now(), kEpoch + 1);
  clock.set(kEpoch - kMicrosPerDay);
  EXPECT_EQ(clock.now(), kEpoch - kMicrosPerDay);
  clock.set(0);
  EXPECT_EQ(clock.now(), 0);
}

TEST(ManualClockTest, AdvanceAddsMicroseconds) {
  ManualClock clock(kEpoch);
  clock.advance(1);
  EXPECT_EQ(clock.now(), kEpoch + 1);
  clock.advance(kMicrosPerSecond);
  EXPECT_EQ(clock.now(), kEpoch + 1 + kMicrosPerSecond);
  clock.advance(0);
  EXPECT_EQ(clock.now(), kEpoch + 1 + kMicrosPerSecond);
  clock.advance(-1);
  EXPECT_EQ(clock.now(), kEpoch + kMicrosPerSecond);
}

TEST(ManualClockTest, IsReadThroughTheClockInterface) {
  ManualClock manual(kEpoch);
  const Clock& clock = manual;
  manual.advance(250 * kMicrosPerMilli);
  EXPECT_EQ(clock.now(), kEpoch + 250'000);
}

TEST(ManualClockTest, ConcurrentAdvancesAreNeverLost) {
  ManualClock clock(kEpoch);
  constexpr int kThreads = 4;
  constexpr int kAdvancesPerThread = 10'000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock] {
      for (int i = 0; i < kAdvancesPerThread; ++i) clock.advance(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(clock.now(), kEpoch + kThreads * kAdvancesPerThread);
}

// The time of day in µs from clock_gettime(CLOCK_REALTIME), apart from the clock under test.
// Not time(): it reads the kernel's coarse clock, which lags the precise one by up to a tick, so
// near a second's boundary it could still name the previous second (a CI run failed so).
Micros realtime_micros() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<Micros>(ts.tv_sec) * kMicrosPerSecond + ts.tv_nsec / 1000;
}

TEST(SystemClockTest, AgreesWithTimeOfDayInMicroseconds) {
  const Micros before = realtime_micros();
  const Micros now = SystemClock::instance().now();
  const Micros after = realtime_micros();
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
  // A realistic epoch in microseconds (after 2023-11, before 2100), not ms or ns.
  EXPECT_GT(now, kEpoch);
  EXPECT_LT(now, 4'102'444'800LL * kMicrosPerSecond);
}

TEST(SystemClockTest, InstanceIsOneSharedClock) {
  EXPECT_EQ(&SystemClock::instance(), &SystemClock::instance());
  const Clock& clock = SystemClock::instance();
  EXPECT_GT(clock.now(), kEpoch);
}

}  // namespace
}  // namespace sluice
