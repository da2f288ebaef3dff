#include "sluice/service/last_seen_usage.h"

#include <gtest/gtest.h>

namespace sluice::service {
namespace {

constexpr Micros kNow = 1'700'000'000'000'000;

Decision seen(std::int64_t limit, std::int64_t remaining, Micros reset_after,
              std::size_t index = 0) {
  Decision decision{.limit_index = index};
  decision.verdict = {
      .allowed = true, .limit = limit, .remaining = remaining, .reset_after = reset_after};
  return decision;
}

TEST(LastSeenUsageTest, GivesTheUsageOnceWhileItsStateLasts) {
  LastSeenUsage usage;
  usage.record("p", "s", seen(100, 40, 1'000, 1), kNow);
  std::optional<SeenUsage> taken = usage.take("p", "s", kNow + 999);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->used, 60);
  EXPECT_EQ(taken->limit_index, 1u);
  EXPECT_FALSE(usage.take("p", "s", kNow + 999).has_value());  // once per outage
}

TEST(LastSeenUsageTest, ForgetsUsageWhoseStateHasReset) {
  LastSeenUsage usage;
  usage.record("p", "s", seen(100, 40, 1'000), kNow);
  EXPECT_FALSE(usage.take("p", "s", kNow + 1'000).has_value());  // the window has moved on
  usage.record("p", "s", seen(100, 40, 1'000), kNow);
  usage.record("p", "s", seen(100, 100, 0), kNow + 10);  // unused again: nothing to seed
  EXPECT_FALSE(usage.take("p", "s", kNow + 20).has_value());
}

TEST(LastSeenUsageTest, KeepsSubjectsOfPoliciesApartAndStaysBounded) {
  LastSeenUsage usage(/*max_subjects=*/16);
  usage.record("p", "s", seen(10, 5, 1'000), kNow);
  EXPECT_FALSE(usage.take("q", "s", kNow).has_value());
  for (int i = 0; i < 1'000; ++i) usage.record("p", std::to_string(i), seen(10, 5, 1'000), kNow);
  int kept = 0;
  for (int i = 0; i < 1'000; ++i) kept += usage.take("p", std::to_string(i), kNow) ? 1 : 0;
  EXPECT_LE(kept, 16 + 16);  // at most a shard's worth over the bound per shard
}

TEST(LastSeenUsageTest, SeedShareIsTheCeilingOfTheNodesFraction) {
  EXPECT_EQ(seed_share(60, 1.0 / 3), 20);
  EXPECT_EQ(seed_share(61, 1.0 / 3), 21);
  EXPECT_EQ(seed_share(7, 1.0), 7);
  EXPECT_EQ(seed_share(0, 0.5), 0);
}

}  // namespace
}  // namespace sluice::service
