#include "sluice/simulate/recommend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace sluice::simulate {
namespace {

using ::testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;

policy::Policy policy_of(std::vector<algorithm::Limit> limits) {
  policy::Policy policy;
  policy.name = "api";
  policy.apps = {"*"};
  policy.limits = std::move(limits);
  return policy;
}

// The smallest value v with at most share × n of `rates` above it: the distribution's quantile
// that a "subjects=share" recommendation must find.
std::int64_t quantile(std::vector<std::int64_t> rates, double share) {
  std::sort(rates.begin(), rates.end());
  const auto allowed_above =
      static_cast<std::size_t>(std::floor(share * static_cast<double>(rates.size())));
  return rates[rates.size() - 1 - allowed_above];
}

TrafficPass pass_over(const std::vector<Event>& events) {
  return [&events](const EventSink& sink) {
    for (const Event& event : events) sink(event);
    return Status();
  };
}

// Subjects with a known per-window request count (log-normal), each spreading its requests
// evenly over each of four aligned minutes: a fixed window of L per minute denies exactly the
// subjects whose count exceeds L.
TEST(RecommendTest, FixedWindowLimitMatchesTheRateDistributionsQuantile) {
  TrafficNames names;
  std::mt19937 random(7);
  std::lognormal_distribution<double> distribution(3.0, 0.8);
  std::vector<std::int64_t> rates;
  std::vector<Event> events;
  for (std::uint32_t s = 0; s < 500; ++s) {
    const std::int64_t rate = 1 + static_cast<std::int64_t>(distribution(random));
    rates.push_back(rate);
    const std::uint32_t subject = names.subjects.intern("user-" + std::to_string(s));
    for (Micros window = 0; window < 4; ++window) {
      for (std::int64_t k = 0; k < rate; ++k) {
        events.push_back({.time = kEpoch / kMicrosPerMinute * kMicrosPerMinute +
                                  window * kMicrosPerMinute + k * (kMicrosPerMinute / rate) + s,
                          .subject = subject});
      }
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });

  for (const double share : {0.01, 0.05, 0.25}) {
    SCOPED_TRACE(share);
    const StatusOr<std::vector<LimitRecommendation>> found =
        recommend(policy_of({algorithm::FixedWindow{.limit = 10, .window = kMicrosPerMinute}}),
                  {.of = ShareOf::kSubjects, .share = share}, names, pass_over(events));
    ASSERT_TRUE(found.ok()) << found.status().message();
    ASSERT_EQ(found->size(), 1u);
    const LimitRecommendation& limit = found->front();
    EXPECT_EQ(limit.parameter, "limit");
    EXPECT_EQ(limit.current, 10);
    ASSERT_TRUE(limit.recommended.has_value());
    EXPECT_EQ(*limit.recommended, quantile(rates, share));
    // The curve holds the answer and its neighbour below, on either side of the target.
    auto at = [&limit](std::int64_t value) {
      return std::find_if(limit.curve.begin(), limit.curve.end(),
                          [value](const CurvePoint& p) { return p.value == value; });
    };
    ASSERT_NE(at(*limit.recommended), limit.curve.end());
    ASSERT_NE(at(*limit.recommended - 1), limit.curve.end());
    EXPECT_LE(at(*limit.recommended)->share(), share);
    EXPECT_GT(at(*limit.recommended - 1)->share(), share);
    EXPECT_TRUE(
        std::is_sorted(limit.curve.begin(), limit.curve.end(),
                       [](const CurvePoint& a, const CurvePoint& b) { return a.value < b.value; }));
  }
}

// GCRA without burst: a subject sending every d µs is never denied at a rate of 1e6/d per second
// or more, and denied from its second request below it.
TEST(RecommendTest, GcraRateMatchesTheRateDistributionsQuantile) {
  TrafficNames names;
  const std::vector<std::int64_t> divisors = {1,  2,  4,  5,  8,   10,  16,  20,
                                              25, 40, 50, 80, 100, 125, 160, 200};
  std::mt19937 random(11);
  std::geometric_distribution<std::size_t> pick(0.3);
  std::vector<std::int64_t> rates;
  std::vector<Event> events;
  for (std::uint32_t s = 0; s < 300; ++s) {
    const std::int64_t rate = divisors[std::min(pick(random), divisors.size() - 1)];
    rates.push_back(rate);
    const std::uint32_t subject = names.subjects.intern("ip-" + std::to_string(s));
    for (std::int64_t k = 0; k < 2 * rate; ++k) {
      events.push_back({.time = kEpoch + s + k * (kMicrosPerSecond / rate), .subject = subject});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  const StatusOr<std::vector<LimitRecommendation>> found =
      recommend(policy_of({algorithm::Gcra{.rate = 5, .period = kMicrosPerSecond, .burst = 0}}),
                {.of = ShareOf::kSubjects, .share = 0.02}, names, pass_over(events));
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(found->front().parameter, "rate");
  ASSERT_TRUE(found->front().recommended.has_value());
  EXPECT_EQ(*found->front().recommended, quantile(rates, 0.02));
}

TEST(RecommendTest, RequestsTargetBoundsTheDeniedShareOfRequests) {
  TrafficNames names;
  std::vector<Event> events;
  const std::uint32_t hot = names.subjects.intern("hot");
  const std::uint32_t calm = names.subjects.intern("calm");
  // In one minute: hot sends 90 requests, calm 10; 10 % of 100 requests may be denied.
  for (std::int64_t k = 0; k < 90; ++k) events.push_back({.time = kEpoch + k, .subject = hot});
  for (std::int64_t k = 0; k < 10; ++k)
    events.push_back({.time = kEpoch + 90 + k, .subject = calm});
  const StatusOr<std::vector<LimitRecommendation>> found =
      recommend(policy_of({algorithm::FixedWindow{.limit = 1, .window = kMicrosPerHour}}),
                {.of = ShareOf::kRequests, .share = 0.10}, names, pass_over(events));
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->front().recommended, 80);  // hot loses 10 of its 90
}

TEST(RecommendTest, StopsWithoutAnAnswerWhenAnotherLimitDecides) {
  TrafficNames names;
  std::vector<Event> events;
  const std::uint32_t key = names.subjects.intern("k");
  for (std::int64_t k = 0; k < 5; ++k) events.push_back({.time = kEpoch + k, .subject = key});
  // limits[1] allows one an hour: 4 of 5 denied whatever limits[0] is.
  const StatusOr<std::vector<LimitRecommendation>> found =
      recommend(policy_of({algorithm::FixedWindow{.limit = 100, .window = kMicrosPerMinute},
                           algorithm::FixedWindow{.limit = 1, .window = kMicrosPerHour}}),
                {.of = ShareOf::kRequests, .share = 0.10}, names, pass_over(events));
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 2u);
  EXPECT_FALSE((*found)[0].recommended.has_value());
  EXPECT_TRUE((*found)[0].plateau);
  EXPECT_LT((*found)[0].curve.size(), 40u);  // stopped, not searched up to max_value
  EXPECT_EQ((*found)[0].curve.back().denied, 4u);
}

TEST(RecommendTest, ParsesTargetsAndRefusesBadOnes) {
  const StatusOr<Target> subjects = parse_target("subjects=1%");
  ASSERT_TRUE(subjects.ok());
  EXPECT_EQ(subjects->of, ShareOf::kSubjects);
  EXPECT_DOUBLE_EQ(subjects->share, 0.01);
  const StatusOr<Target> requests = parse_target("requests=0.1%");
  ASSERT_TRUE(requests.ok());
  EXPECT_EQ(requests->of, ShareOf::kRequests);
  EXPECT_DOUBLE_EQ(requests->share, 0.001);
  for (const char* bad : {"subjects=1", "users=1%", "subjects=101%", "subjects=x%", "1%"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(std::string(parse_target(bad).status().message()), HasSubstr("--recommend"));
  }
}

}  // namespace
}  // namespace sluice::simulate
