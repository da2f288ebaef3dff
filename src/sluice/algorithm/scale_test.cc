#include <gtest/gtest.h>

#include "sluice/algorithm/catalogue.h"

namespace sluice::algorithm {
namespace {

TEST(ScaleLimitTest, FullFractionKeepsTheLimit) {
  const Limit limit = Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 4};
  EXPECT_EQ(std::get<Gcra>(scale_limit(limit, 1.0)).burst, 4);
  EXPECT_EQ(std::get<Gcra>(scale_limit(limit, 1.0)).period, kMicrosPerSecond);
}

TEST(ScaleLimitTest, CountsShrinkButNeverBelowOne) {
  EXPECT_EQ(std::get<FixedWindow>(scale_limit(FixedWindow{.limit = 100, .window = 1}, 0.25)).limit,
            25);
  EXPECT_EQ(std::get<FixedWindow>(scale_limit(FixedWindow{.limit = 3, .window = 1}, 0.25)).limit,
            1);
  EXPECT_EQ(std::get<Concurrency>(scale_limit(Concurrency{.limit = 10, .lease_ttl = 1}, 0.5)).limit,
            5);
  EXPECT_EQ(std::get<SlidingLog>(scale_limit(SlidingLog{.limit = 9, .window = 1}, 0.5)).limit, 4);
}

TEST(ScaleLimitTest, RatesSlowDownByStretchingThePeriodExactly) {
  const auto bucket = std::get<TokenBucket>(scale_limit(
      TokenBucket{.capacity = 10, .refill = 1, .period = kMicrosPerSecond, .initial = 6}, 0.5));
  EXPECT_EQ(bucket.capacity, 5);
  EXPECT_EQ(bucket.refill, 1);
  EXPECT_EQ(bucket.period, 2 * kMicrosPerSecond);
  EXPECT_EQ(bucket.initial, 3);
  const auto gcra =
      std::get<Gcra>(scale_limit(Gcra{.rate = 3, .period = 1000, .burst = 5}, 1.0 / 3));
  EXPECT_EQ(gcra.period, 3000);
  EXPECT_EQ(gcra.burst, 1);  // (5 + 1) / 3 - 1
  const auto leaky = std::get<LeakyBucket>(
      scale_limit(LeakyBucket{.rate = 1, .period = 1000, .max_delay = 7}, 0.1));
  EXPECT_EQ(leaky.period, 10'000);
  EXPECT_EQ(leaky.max_delay, 7);
}

}  // namespace
}  // namespace sluice::algorithm
