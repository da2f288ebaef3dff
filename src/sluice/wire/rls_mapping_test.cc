#include "sluice/wire/rls_mapping.h"

#include <gtest/gtest.h>

#include <variant>

namespace sluice::wire {
namespace {

policy::Policy window_policy(algorithm::Limit limit) {
  return {.name = "p", .apps = {"d"}, .limits = {limit}};
}

TEST(DescriptorCost, DescriptorHitsAddendOverridesTheRequestsAndZeroMeansOneOnlyThere) {
  struct Case {
    std::uint32_t request;
    std::optional<std::uint64_t> descriptor;
    std::int64_t expected;
  };
  for (const Case& c : std::vector<Case>{
           {0, std::nullopt, 1}, {5, std::nullopt, 5}, {5, 2, 2}, {5, 0, 0}, {0, 7, 7}}) {
    SCOPED_TRACE(std::to_string(c.request) + " " + std::to_string(c.descriptor.value_or(99)));
    StatusOr<std::int64_t> cost = descriptor_cost(c.request, c.descriptor);
    ASSERT_TRUE(cost.ok()) << cost.status().to_string();
    EXPECT_EQ(*cost, c.expected);
  }
  EXPECT_FALSE(descriptor_cost(0, std::uint64_t{1'000'000'001}).ok());
  EXPECT_TRUE(descriptor_cost(0, std::uint64_t{1'000'000'000}).ok());
}

TEST(StatusFromDecision, CarriesLimitRemainingResetAndTheUnitOfExactWindows) {
  const policy::Policy minute =
      window_policy(algorithm::FixedWindow{.limit = 10, .window = kMicrosPerMinute});
  const service::Decision denied{
      .verdict = {.allowed = false, .limit = 10, .remaining = 0, .reset_after = 1'500'000}};
  const RlsStatus status = status_from_decision(denied, minute);
  EXPECT_EQ(status.code, RlsCode::kOverLimit);
  ASSERT_TRUE(status.current_limit);
  EXPECT_EQ(status.current_limit->name, "p");
  EXPECT_EQ(status.current_limit->requests_per_unit, 10u);
  EXPECT_EQ(status.current_limit->unit, RlsUnit::kMinute);
  EXPECT_EQ(status.limit_remaining, 0u);
  EXPECT_EQ(status.duration_until_reset, 1'500'000);

  const policy::Policy odd =
      window_policy(algorithm::SlidingWindow{.limit = 3, .window = 90 * kMicrosPerSecond});
  const RlsStatus unknown =
      status_from_decision({.verdict = {.allowed = true, .limit = 3, .remaining = 2}}, odd);
  EXPECT_EQ(unknown.code, RlsCode::kOk);
  EXPECT_EQ(unknown.current_limit->unit, RlsUnit::kUnknown);
  EXPECT_EQ(unknown.limit_remaining, 2u);

  const policy::Policy bucket =
      window_policy(algorithm::TokenBucket{.capacity = 5, .refill = 5, .period = kMicrosPerHour});
  EXPECT_EQ(
      status_from_decision({.verdict = {.allowed = true, .limit = 5}}, bucket).current_limit->unit,
      RlsUnit::kHour);
}

TEST(StatusFromDecision, EnvoyAnswersNameTheLimitRoundToWholeSecondsAndMarkUnlimited) {
  policy::Policy imported = window_policy(algorithm::FixedWindow{
      .limit = 5, .window = kMicrosPerMinute, .denied_cost = algorithm::DeniedCost::kCounted});
  imported.descriptors = policy::DescriptorSection{.entries = {{.key = "user"}},
                                                   .limit_name = "per_user",
                                                   .answers = policy::DescriptorAnswers::kEnvoy};
  const RlsStatus status = status_from_decision(
      {.verdict = {.allowed = true, .limit = 5, .remaining = 4, .reset_after = 49'500'001}},
      imported);
  EXPECT_EQ(status.current_limit->name, "per_user");
  EXPECT_EQ(status.duration_until_reset, 50 * kMicrosPerSecond);  // rounded up
  EXPECT_EQ(status_from_decision(
                {.verdict = {.allowed = true, .reset_after = 3 * kMicrosPerSecond}}, imported)
                .duration_until_reset,
            3 * kMicrosPerSecond);  // whole already

  policy::Policy unlimited{.name = "u", .apps = {"d"}};
  unlimited.descriptors = policy::DescriptorSection{
      .entries = {{.key = "k"}}, .unlimited = true, .answers = policy::DescriptorAnswers::kEnvoy};
  const RlsStatus open = status_from_decision({.verdict = {.allowed = true}}, unlimited);
  EXPECT_FALSE(open.current_limit);
  EXPECT_EQ(open.limit_remaining, 4'294'967'295u);
  unlimited.descriptors->answers = policy::DescriptorAnswers::kSluice;
  EXPECT_EQ(status_from_decision({.verdict = {.allowed = true}}, unlimited).limit_remaining, 0u);
}

TEST(ResponseHeaders, DescribeTheStatusWithTheFewestRemaining) {
  const std::vector<RlsStatus> statuses = {
      {.code = RlsCode::kOk},  // unmatched: no limit, ignored
      {.code = RlsCode::kOk,
       .current_limit = RlsLimit{.name = "a", .requests_per_unit = 100, .unit = RlsUnit::kHour},
       .limit_remaining = 40,
       .duration_until_reset = 10 * kMicrosPerSecond},
      {.code = RlsCode::kOverLimit,
       .current_limit = RlsLimit{.name = "b", .requests_per_unit = 10, .unit = RlsUnit::kMinute},
       .limit_remaining = 0,
       .duration_until_reset = 2 * kMicrosPerSecond + 1},
  };
  EXPECT_EQ(response_headers(statuses, RlsHeaders::kXRateLimit),
            (std::vector<Header>{{"x-ratelimit-limit", "10, 10;w=60"},
                                 {"x-ratelimit-remaining", "0"},
                                 {"x-ratelimit-reset", "3"}}));
  EXPECT_EQ(
      response_headers(statuses, RlsHeaders::kRateLimit),
      (std::vector<Header>{
          {"RateLimit-Limit", "10"}, {"RateLimit-Remaining", "0"}, {"RateLimit-Reset", "3"}}));
  EXPECT_TRUE(response_headers(statuses, RlsHeaders::kNone).empty());
  EXPECT_TRUE(response_headers({{.code = RlsCode::kOk}}, RlsHeaders::kXRateLimit).empty());
}

TEST(ResponseHeaders, TheLastOverLimitStatusWinsAsInEnvoyRatelimit) {
  const auto over = [](std::uint32_t requests) {
    return RlsStatus{.code = RlsCode::kOverLimit,
                     .current_limit = RlsLimit{.requests_per_unit = requests},
                     .duration_until_reset = kMicrosPerSecond};
  };
  const RlsStatus shadowed{.code = RlsCode::kOk,
                           .current_limit = RlsLimit{.requests_per_unit = 7},
                           .limit_remaining = 0,
                           .duration_until_reset = kMicrosPerSecond};
  EXPECT_EQ(response_headers({over(5), over(9), shadowed}, RlsHeaders::kRateLimit).front().value,
            "9");
  EXPECT_EQ(response_headers({shadowed, over(5)}, RlsHeaders::kRateLimit).front().value, "5");
}

TEST(OverrideLimit, IsAFixedWindowOfTheUnitAndRefusesZeroAndUnknown) {
  struct Case {
    int unit;
    Micros window;
  };
  for (const Case& c : std::vector<Case>{{1, kMicrosPerSecond},
                                         {2, kMicrosPerMinute},
                                         {3, kMicrosPerHour},
                                         {4, kMicrosPerDay},
                                         {5, 30 * kMicrosPerDay},
                                         {6, 365 * kMicrosPerDay},
                                         {7, 7 * kMicrosPerDay}}) {
    SCOPED_TRACE(c.unit);
    StatusOr<algorithm::Limit> limit = override_limit(7, c.unit);
    ASSERT_TRUE(limit.ok()) << limit.status().to_string();
    const auto& window = std::get<algorithm::FixedWindow>(*limit);
    EXPECT_EQ(window.limit, 7);
    EXPECT_EQ(window.window, c.window);
  }
  EXPECT_FALSE(override_limit(0, 1).ok());
  EXPECT_FALSE(override_limit(1, 0).ok());
  EXPECT_FALSE(override_limit(1, 8).ok());
}

TEST(OverrideSubject, NeverEqualsASubjectOfThePolicysOwnPath) {
  // Own subjects of a one-entry path have no unescaped '|'; an override adds one.
  const std::string own = policy::descriptor_subject({{"k", "a|override:2/4"}});
  EXPECT_EQ(own, "a\\|override:2/4");
  EXPECT_EQ(override_subject("a", 2, 4), "a|override:2/4");
  EXPECT_NE(override_subject("a", 2, 4), own);
  EXPECT_NE(override_subject("a", 2, 4), override_subject("a", 2, 3));
}

TEST(RlsHeaders, ParseAndNameRoundTrip) {
  for (RlsHeaders h : {RlsHeaders::kNone, RlsHeaders::kXRateLimit, RlsHeaders::kRateLimit}) {
    EXPECT_EQ(*parse_rls_headers(rls_headers_name(h)), h);
  }
  EXPECT_FALSE(parse_rls_headers("github").ok());
}

}  // namespace
}  // namespace sluice::wire
