// DecisionHistory over real DecisionMetrics, sampled at explicit instants: per-second deltas,
// zero padding for policies that appear later, the bound on points. Nothing sleeps.
#include "sluice/service/decision_history.h"

#include <gtest/gtest.h>

#include "sluice/service/decision.h"

namespace sluice::service {
namespace {

constexpr Micros kT0 = 1'700'000'000'000'000;
constexpr Micros kSecond = 1'000'000;

void decide(DecisionMetrics& metrics, std::string policy, bool allowed, int times = 1) {
  Decision decision;
  decision.verdict.allowed = allowed;
  decision.policy = std::move(policy);
  for (int i = 0; i < times; ++i) metrics.record(decision, 10);
}

TEST(DecisionHistoryTest, EachPointCountsTheDecisionsSinceThePreviousSample) {
  DecisionMetrics metrics;
  DecisionHistory history(metrics);
  decide(metrics, "a", true, 5);  // before the baseline: not in any point
  history.sample(kT0);
  EXPECT_TRUE(history.points("a").empty());
  decide(metrics, "a", true, 3);
  decide(metrics, "a", false, 2);
  history.sample(kT0 + kSecond);
  history.sample(kT0 + 2 * kSecond);
  const std::vector<DecisionHistory::Point> points = history.points("a");
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].at, kT0 + kSecond);
  EXPECT_EQ(points[0].allowed, 3u);
  EXPECT_EQ(points[0].denied, 2u);
  EXPECT_EQ(points[1].allowed, 0u);
  EXPECT_EQ(points[1].denied, 0u);
}

TEST(DecisionHistoryTest, APolicySeenLaterHasZerosBeforeAndUnknownPoliciesAreAllZero) {
  DecisionMetrics metrics;
  DecisionHistory history(metrics);
  history.sample(kT0);
  history.sample(kT0 + kSecond);
  decide(metrics, "late", false);
  Decision shadow;
  shadow.verdict.allowed = true;
  shadow.shadow_denied = true;
  shadow.degraded = true;
  shadow.policy = "late";
  metrics.record(shadow, 10);
  history.sample(kT0 + 2 * kSecond);
  const auto late = history.points("late");
  ASSERT_EQ(late.size(), 2u);
  EXPECT_EQ(late[0].denied, 0u);
  EXPECT_EQ(late[1].denied, 1u);
  EXPECT_EQ(late[1].allowed, 1u);
  EXPECT_EQ(late[1].shadow_denied, 1u);
  EXPECT_EQ(late[1].degraded, 1u);
  const auto none = history.points("none");
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[1].allowed + none[1].denied, 0u);
}

TEST(DecisionHistoryTest, KeepsTheLastPointsAndIgnoresSamplesNotAfterThePrevious) {
  DecisionMetrics metrics;
  DecisionHistory history(metrics, 3);
  history.sample(kT0);
  for (int i = 1; i <= 5; ++i) {
    decide(metrics, "a", true, i);
    history.sample(kT0 + i * kSecond);
  }
  history.sample(kT0 + 5 * kSecond);  // same instant: ignored
  const auto points = history.points("a");
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points.front().at, kT0 + 3 * kSecond);
  EXPECT_EQ(points.front().allowed, 3u);
  EXPECT_EQ(points.back().allowed, 5u);
}

}  // namespace
}  // namespace sluice::service
