#include "sluice/core/log_throttle.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(LogThrottleTest, ReportsTheFirstThenOncePerIntervalWithWhatWasHeldBack) {
  ManualClock clock(1'000'000);
  LogThrottle throttle(clock, 10 * kMicrosPerSecond);
  EXPECT_EQ(throttle.occurred(), 1u);
  EXPECT_EQ(throttle.occurred(), std::nullopt);
  clock.advance(10 * kMicrosPerSecond - 1);
  EXPECT_EQ(throttle.occurred(), std::nullopt);  // 1 µs short of the interval
  clock.advance(1);
  EXPECT_EQ(throttle.occurred(), 3u);  // itself and the two held back
  EXPECT_EQ(throttle.occurred(), std::nullopt);
  clock.advance(60 * kMicrosPerSecond);
  EXPECT_EQ(throttle.occurred(), 2u);
  clock.advance(60 * kMicrosPerSecond);
  EXPECT_EQ(throttle.occurred(), 1u);  // a quiet interval: nothing held back
}

}  // namespace
}  // namespace sluice
