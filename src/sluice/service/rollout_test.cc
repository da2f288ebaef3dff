// Staged rollout: which subjects are enforced, how many, and that it stays so.
#include "sluice/service/rollout.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::service {
namespace {

// FNV-1a 64 of "api\0user-1" and "orders.create\0", folded, modulo a million (by hand).
constexpr std::uint32_t kUser1Bucket = 623'603;
constexpr std::uint32_t kEmptyBucket = 84'236;

policy::Policy rolled_out(std::optional<double> percent, std::string name = "api") {
  return {.name = std::move(name), .mode = policy::Mode::kEnforce, .rollout = percent};
}

double enforced_share(const policy::Policy& policy, int subjects) {
  int enforced = 0;
  for (int i = 0; i < subjects; ++i) enforced += enforced_for(policy, "user-" + std::to_string(i));
  return static_cast<double>(enforced) / subjects;
}

TEST(RolloutTest, EnforcesTheStatedShareOfSubjects) {
  // 200 000 subjects: one standard deviation is at most 0.11 points; allow about four.
  for (double percent : {1.0, 10.0, 25.0, 50.0, 90.0}) {
    SCOPED_TRACE(percent);
    EXPECT_NEAR(enforced_share(rolled_out(percent), 200'000), percent / 100, 0.0045);
  }
  EXPECT_EQ(enforced_share(rolled_out(0.0), 10'000), 0.0);
  EXPECT_EQ(enforced_share(rolled_out(100.0), 10'000), 1.0);
  EXPECT_EQ(enforced_share(rolled_out(std::nullopt), 10'000), 1.0) << "no rollout: everyone";
}

TEST(RolloutTest, GroupsNestAsTheShareGrowsAndDependOnThePolicy) {
  int moved_out = 0;
  int differs = 0;
  for (int i = 0; i < 50'000; ++i) {
    const std::string subject = "user-" + std::to_string(i);
    if (enforced_for(rolled_out(1), subject) && !enforced_for(rolled_out(10), subject)) {
      ++moved_out;
    }
    differs +=
        enforced_for(rolled_out(50), subject) != enforced_for(rolled_out(50, "other"), subject);
  }
  EXPECT_EQ(moved_out, 0) << "raising 1 % to 10 % keeps the first 1 % enforced";
  EXPECT_GT(differs, 20'000) << "each policy draws its own subjects";
}

TEST(RolloutTest, BucketsAreStableAcrossProcessesAndReleases) {
  // Fixed values: a changed hash would move subjects between groups on upgrade.
  EXPECT_EQ(rollout_bucket("api", "user-1"), rollout_bucket("api", "user-1"));
  EXPECT_EQ(rollout_bucket("api", "user-1"), kUser1Bucket);
  EXPECT_EQ(rollout_bucket("orders.create", ""), kEmptyBucket);
}

TEST(RolloutTest, ShadowModeEnforcesNoOne) {
  policy::Policy shadow = rolled_out(std::nullopt);
  shadow.mode = policy::Mode::kShadow;
  EXPECT_FALSE(enforced_for(shadow, "user-1"));
}

}  // namespace
}  // namespace sluice::service
