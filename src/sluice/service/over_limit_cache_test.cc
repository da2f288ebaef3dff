// The over-limit cache on an injected timeline: its bound, its keys, its memory and metrics.
#include "sluice/service/over_limit_cache.h"

#include <gtest/gtest.h>

namespace sluice::service {
namespace {

policy::Policy window_policy(std::int64_t limit = 5) {
  return {.name = "p", .limits = {algorithm::FixedWindow{.limit = limit, .window = 1000}}};
}

Decision denial(Micros retry_after, Micros reset_after = 0) {
  return {.verdict = {.allowed = false,
                      .limit = 5,
                      .remaining = 1,
                      .retry_after = retry_after,
                      .reset_after = reset_after},
          .limit_index = 0};
}

TEST(OverLimitCacheTest, DeniesUntilTheSendInstantPlusRetryAfterAndNotAMicrosecondLonger) {
  DefenceMetrics metrics;
  OverLimitCache cache(1000, metrics);
  const policy::Policy policy = window_policy();
  // Sent at 1 000, answered at 1 030: the store counted retry_after from between the two.
  cache.remember(policy, "a", 2, denial(100, 400), 1000, 1030);
  std::optional<Decision> hit = cache.find(policy, "a", 2, 1040);
  ASSERT_TRUE(hit.has_value());
  EXPECT_FALSE(hit->verdict.allowed);
  EXPECT_EQ(hit->verdict.retry_after, 60);
  EXPECT_EQ(hit->verdict.reset_after, 360);
  EXPECT_EQ(hit->verdict.limit, 5);
  EXPECT_TRUE(cache.find(policy, "a", 2, 1099).has_value());
  EXPECT_FALSE(cache.find(policy, "a", 2, 1100).has_value()) << "the store may allow from 1100";
  EXPECT_EQ(cache.size(), 0u) << "an expired entry goes when found";
  EXPECT_EQ(metrics.cache_hits(), 2u);
  EXPECT_EQ(metrics.cache_entries(), 0);
}

TEST(OverLimitCacheTest, AnswersOnlyCostsAtLeastTheDeniedOneForTheSameLimits) {
  DefenceMetrics metrics;
  OverLimitCache cache(1000, metrics);
  const policy::Policy policy = window_policy();
  cache.remember(policy, "a", 3, denial(100), 0, 0);
  EXPECT_FALSE(cache.find(policy, "a", 2, 1).has_value()) << "a smaller cost may pass earlier";
  EXPECT_TRUE(cache.find(policy, "a", 3, 1).has_value());
  EXPECT_TRUE(cache.find(policy, "a", 9, 1).has_value());
  EXPECT_FALSE(cache.find(policy, "b", 3, 1).has_value()) << "another subject";
  policy::Policy other = window_policy();
  other.name = "q";
  EXPECT_FALSE(cache.find(other, "a", 3, 1).has_value()) << "another policy";
  EXPECT_FALSE(cache.find(window_policy(50), "a", 3, 1).has_value()) << "the limit was raised";
  EXPECT_EQ(metrics.cache_hits(), 2u);
}

TEST(OverLimitCacheTest, RemembersNeitherAllowedAnswersNorCostsThatCanNeverPass) {
  DefenceMetrics metrics;
  OverLimitCache cache(1000, metrics);
  const policy::Policy policy = window_policy();
  cache.remember(policy, "a", 1, {.verdict = {.allowed = true, .limit = 5}}, 0, 0);
  cache.remember(policy, "b", 9, {.verdict = {.allowed = false, .limit = 5}}, 0, 0);
  cache.remember(policy, "c", 1, denial(10), 0, 10);  // already past when answered
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.find(policy, "b", 9, 1).has_value());
}

TEST(OverLimitCacheTest, ANewerDenialReplacesTheSubjectsEntryAndForgetDropsIt) {
  DefenceMetrics metrics;
  OverLimitCache cache(1000, metrics);
  const policy::Policy policy = window_policy();
  cache.remember(policy, "a", 3, denial(100), 0, 0);
  cache.remember(policy, "a", 1, denial(50), 10, 10);
  EXPECT_EQ(cache.size(), 1u);
  std::optional<Decision> hit = cache.find(policy, "a", 1, 20);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->verdict.retry_after, 40);
  cache.forget("p", "a");
  EXPECT_FALSE(cache.find(policy, "a", 3, 20).has_value());
  EXPECT_EQ(metrics.cache_entries(), 0);
}

TEST(OverLimitCacheTest, StaysWithinCapacityDroppingExpiredEntriesBeforeLiveOnes) {
  DefenceMetrics metrics;
  OverLimitCache cache(64, metrics);
  const policy::Policy policy = window_policy();
  for (int i = 0; i < 1000; ++i) {
    cache.remember(policy, "s" + std::to_string(i), 1, denial(1'000'000 + i), 0, 0);
    ASSERT_LE(cache.size(), 64u);
  }
  EXPECT_EQ(static_cast<std::size_t>(metrics.cache_entries()), cache.size());
  EXPECT_EQ(metrics.cache_evictions(), 1000u - cache.size());
  // The survivors are the latest to expire: subject 999 expires last, so it is kept.
  EXPECT_TRUE(cache.find(policy, "s999", 1, 1).has_value());
  // Once they have expired, new entries replace them without counting evictions.
  const std::uint64_t evictions = metrics.cache_evictions();
  for (int i = 0; i < 1000; ++i) {
    cache.remember(policy, "t" + std::to_string(i), 1, denial(10), 2'000'000, 2'000'000);
  }
  EXPECT_LE(cache.size(), 64u);
  EXPECT_GE(metrics.cache_evictions(), evictions);
  EXPECT_EQ(static_cast<std::size_t>(metrics.cache_entries()), cache.size());
}

TEST(OverLimitCacheTest, CapacityZeroHoldsNothing) {
  DefenceMetrics metrics;
  OverLimitCache cache(0, metrics);
  cache.remember(window_policy(), "a", 1, denial(100), 0, 0);
  EXPECT_FALSE(cache.find(window_policy(), "a", 1, 1).has_value());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(OverLimitCacheTest, FingerprintsTellEveryParameterApart) {
  using namespace algorithm;
  const std::vector<Limit> base = {TokenBucket{.capacity = 5, .refill = 1, .period = 10}};
  const std::uint64_t print = limits_fingerprint(base);
  EXPECT_EQ(print, limits_fingerprint(std::vector<Limit>(base)));
  EXPECT_NE(print, limits_fingerprint(
                       std::vector<Limit>{TokenBucket{.capacity = 6, .refill = 1, .period = 10}}));
  EXPECT_NE(print, limits_fingerprint(
                       std::vector<Limit>{TokenBucket{.capacity = 5, .refill = 1, .period = 11}}));
  EXPECT_NE(print, limits_fingerprint(std::vector<Limit>{Gcra{.rate = 5, .period = 10}}));
  EXPECT_NE(limits_fingerprint(std::vector<Limit>{FixedWindow{.limit = 5, .window = 10}}),
            limits_fingerprint(std::vector<Limit>{SlidingWindow{.limit = 5, .window = 10}}));
}

}  // namespace
}  // namespace sluice::service
