#include "sluice/wire/rate_limit_headers.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/evaluate.h"

namespace sluice::wire {
namespace {

using algorithm::Concurrency;
using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::TokenBucket;

constexpr Micros kNow = 1'700'000'000'250'000;  // 0.25 s past a whole second

std::map<std::string, std::string> by_name(const std::vector<Header>& headers) {
  std::map<std::string, std::string> out;
  for (const Header& h : headers) out[h.name] = h.value;
  return out;
}

const std::vector<Limit> kDemo = {
    TokenBucket{.capacity = 5, .refill = 2, .period = kMicrosPerSecond},
    FixedWindow{.limit = 100, .window = kMicrosPerHour}};

service::Decision allowed_decision() {
  service::Decision d{.policy = "demo.api"};
  d.verdict = {.allowed = true, .limit = 5, .remaining = 4, .reset_after = 500'000};
  return d;
}

TEST(RateLimitHeadersTest, QuotaPolicyPerAlgorithm) {
  struct Case {
    const char* name;
    Limit limit;
    std::int64_t q;
    std::optional<std::int64_t> w;
    std::optional<std::string_view> unit;
  };
  const std::vector<Case> cases = {
      {"token bucket refills 5 at 2/s in 2.5 s", kDemo[0], 5, 3, {}},
      {"fixed window", kDemo[1], 100, 3600, {}},
      {"gcra 10/s burst 4", Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 4}, 5, 1, {}},
      {"leaky bucket queue",
       LeakyBucket{.rate = 10, .period = kMicrosPerSecond, .max_delay = kMicrosPerSecond},
       11,
       2,
       {}},
      {"window of 1.5 s rounds up", FixedWindow{.limit = 3, .window = 1'500'000}, 3, 2, {}},
      {"a calendar month has no one length",
       FixedWindow{.limit = 9,
                   .window = algorithm::longest_period(algorithm::CalendarPeriod::kMonth),
                   .calendar = algorithm::Calendar{.period = algorithm::CalendarPeriod::kMonth}},
       9,
       {},
       {}},
      {"concurrency",
       Concurrency{.limit = 7, .lease_ttl = kMicrosPerMinute},
       7,
       {},
       "concurrent-requests"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const QuotaPolicy quota = quota_policy(c.limit);
    EXPECT_EQ(quota.quota, c.q);
    EXPECT_EQ(quota.window_seconds, c.w);
    EXPECT_EQ(quota.unit, c.unit);
  }
}

// Every header's limit is the one the decision reports: the catalogue's nominal size, for every
// algorithm (service/limit_agreement_test.cc: the store's and the failure modes' decisions).
TEST(RateLimitHeadersTest, HeadersReportTheLimitTheDecisionReports) {
  const std::vector<Limit> limits = {
      kDemo[0],
      TokenBucket{.capacity = 10,
                  .refill = 10,
                  .period = kMicrosPerMinute,
                  .refill_mode = algorithm::RefillMode::kInterval},
      Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 4},
      LeakyBucket{.rate = 10, .period = kMicrosPerSecond, .max_delay = 500'000},
      LeakyBucket{.rate = 3, .period = kMicrosPerSecond},
      kDemo[1],
      algorithm::SlidingWindow{.limit = 50, .window = kMicrosPerMinute},
      algorithm::SlidingLog{.limit = 7, .window = kMicrosPerSecond},
      Concurrency{.limit = 7, .lease_ttl = kMicrosPerMinute}};
  for (const Limit& limit : limits) {
    SCOPED_TRACE(algorithm::limit_words(limit));
    const Limit one[] = {limit};
    algorithm::LimitState states[] = {algorithm::initial_state(limit, kNow)};
    service::Decision decision{.policy = "p"};
    decision.verdict = algorithm::evaluate(one, states, 1, kNow, "lease").verdict;
    const std::string size = std::to_string(algorithm::nominal_size(limit));
    EXPECT_EQ(std::to_string(decision.verdict.limit), size);
    const auto h = by_name(rate_limit_headers(decision, one, kNow, {}));
    EXPECT_EQ(h.at("X-RateLimit-Limit"), size);
    EXPECT_EQ(h.at("RateLimit-Limit"), size);
    EXPECT_TRUE(h.at("RateLimit-Policy").starts_with("\"p\";q=" + size))
        << h.at("RateLimit-Policy");
  }
}

TEST(RateLimitHeadersTest, AllowedDecisionEmitsEverySet) {
  const auto h = by_name(rate_limit_headers(allowed_decision(), kDemo, kNow, {}));
  EXPECT_EQ(h.at("X-RateLimit-Limit"), "5");
  EXPECT_EQ(h.at("X-RateLimit-Remaining"), "4");
  // now + 0.5 s = ...000.75 s, rounded up.
  EXPECT_EQ(h.at("X-RateLimit-Reset"), "1700000001");
  EXPECT_EQ(h.at("RateLimit-Limit"), "5");
  EXPECT_EQ(h.at("RateLimit-Remaining"), "4");
  EXPECT_EQ(h.at("RateLimit-Reset"), "1");
  EXPECT_EQ(h.at("RateLimit-Policy"), "\"demo.api\";q=5;w=3, \"demo.api/1\";q=100;w=3600");
  EXPECT_EQ(h.at("RateLimit"), "\"demo.api\";r=4;t=1");
  EXPECT_EQ(h.count("Retry-After"), 0u);
}

TEST(RateLimitHeadersTest, DenialResetsAtRetryAfterAndNamesTheDecidingLimit) {
  service::Decision d{.limit_index = 1, .policy = "demo.api"};
  d.verdict = {.allowed = false,
               .limit = 100,
               .remaining = 0,
               .retry_after = 2'000'001,  // 2 s + 1 µs: every seconds value rounds up to 3
               .reset_after = 3'600'000'000};
  const auto h = by_name(rate_limit_headers(d, kDemo, kNow, {}));
  EXPECT_EQ(h.at("X-RateLimit-Remaining"), "0");
  EXPECT_EQ(h.at("X-RateLimit-Reset"), "1700000003");  // ceil(...000.25 + 2.000001)
  EXPECT_EQ(h.at("RateLimit-Reset"), "3");
  EXPECT_EQ(h.at("RateLimit"), "\"demo.api/1\";r=0;t=3");
  EXPECT_EQ(retry_after_seconds(d), 3);
}

TEST(RateLimitHeadersTest, RetryAfterIsNeverZeroNorEarlierThanT) {
  service::Decision d{.policy = "p"};
  d.verdict = {.allowed = false, .limit = 1, .retry_after = 1, .reset_after = 1};
  EXPECT_EQ(retry_after_seconds(d), 1);
  d.verdict.retry_after = kMicrosPerSecond;
  EXPECT_EQ(retry_after_seconds(d), 1);
  d.verdict.retry_after = kMicrosPerSecond + 1;
  EXPECT_EQ(retry_after_seconds(d), 2);
  const auto h = by_name(rate_limit_headers(d, kDemo, kNow, {}));
  EXPECT_EQ(h.at("RateLimit"), "\"p\";r=0;t=2");
}

TEST(RateLimitHeadersTest, NeverGrantableCostHasNoRetryAfterAndResetsAtResetAfter) {
  service::Decision d{.policy = "p"};
  d.verdict = {.allowed = false, .limit = 5, .remaining = 5, .reset_after = 0};
  EXPECT_EQ(retry_after_seconds(d), std::nullopt);
  const auto h = by_name(rate_limit_headers(d, kDemo, kNow, {}));
  EXPECT_EQ(h.at("RateLimit-Reset"), "0");
  EXPECT_EQ(retry_after_seconds(allowed_decision()), std::nullopt);
}

TEST(RateLimitHeadersTest, SetsAreSelectable) {
  const auto only_github = rate_limit_headers(allowed_decision(), kDemo, kNow,
                                              {.github = true, .draft6 = false, .draft10 = false});
  ASSERT_EQ(only_github.size(), 3u);
  EXPECT_EQ(only_github[0].name, "X-RateLimit-Limit");
  const auto only_draft10 = by_name(rate_limit_headers(
      allowed_decision(), kDemo, kNow, {.github = false, .draft6 = false, .draft10 = true}));
  EXPECT_EQ(only_draft10.size(), 2u);
  EXPECT_TRUE(only_draft10.contains("RateLimit-Policy"));
  EXPECT_TRUE(rate_limit_headers(allowed_decision(), kDemo, kNow,
                                 {.github = false, .draft6 = false, .draft10 = false})
                  .empty());
}

TEST(RateLimitHeadersTest, DisabledPolicyDecisionHasNoHeaders) {
  service::Decision d{.policy = "off"};
  d.verdict = {.allowed = true};
  EXPECT_TRUE(rate_limit_headers(d, kDemo, kNow, {}).empty());
}

TEST(RateLimitHeadersTest, ConcurrencyPolicyAdvertisesItsUnitWithoutWindow) {
  const std::vector<Limit> limits = {Concurrency{.limit = 2, .lease_ttl = kMicrosPerMinute}};
  service::Decision d{.policy = "jobs"};
  d.verdict = {.allowed = true, .limit = 2, .remaining = 1, .reset_after = kMicrosPerMinute};
  const auto h = by_name(rate_limit_headers(d, limits, kNow, {}));
  EXPECT_EQ(h.at("RateLimit-Policy"), "\"jobs\";q=2;qu=\"concurrent-requests\"");
}

TEST(RateLimitHeadersTest, ParsesHeaderSetLists) {
  ASSERT_TRUE(parse_header_sets("all").ok());
  const StatusOr<HeaderSets> some = parse_header_sets("github, draft10");
  ASSERT_TRUE(some.ok());
  EXPECT_TRUE(some->github);
  EXPECT_FALSE(some->draft6);
  EXPECT_TRUE(some->draft10);
  EXPECT_EQ(format_header_sets(*some), "github,draft10");
  EXPECT_EQ(format_header_sets(*parse_header_sets("none")), "none");
  const StatusOr<HeaderSets> bad = parse_header_sets("github,rfc");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"rfc\""), std::string::npos);
}

TEST(RateLimitHeadersTest, CeilSeconds) {
  EXPECT_EQ(ceil_seconds(0), 0);
  EXPECT_EQ(ceil_seconds(-5), 0);
  EXPECT_EQ(ceil_seconds(1), 1);
  EXPECT_EQ(ceil_seconds(kMicrosPerSecond), 1);
  EXPECT_EQ(ceil_seconds(kMicrosPerSecond + 1), 2);
}

}  // namespace
}  // namespace sluice::wire

namespace sluice::wire {
namespace {

service::Decision denied_for(std::optional<Micros> retry_after) {
  service::Decision d{.policy = "p"};
  d.verdict = {.allowed = false, .limit = 1, .retry_after = retry_after, .reset_after = 1};
  return d;
}

TEST(RetryJitterTest, SpreadsWholeSecondsFromTheExactRetryUpToThePercentLater) {
  const service::Decision ten = denied_for(10 * kMicrosPerSecond);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 0, 0.99), 10);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 10, 0.0), 10);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 10, 0.49), 10);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 10, 0.5), 11);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 10, 0.999999), 11);
  EXPECT_EQ(jittered_retry_after_seconds(ten, 10, 1.0), 11);  // clamped into the range
  // 10.000001 s: the exact answer is already 11 s; 10 % later is 11.0000011 s, so 11 or 12.
  const service::Decision just_over = denied_for(10 * kMicrosPerSecond + 1);
  EXPECT_EQ(jittered_retry_after_seconds(just_over, 10, 0.0), 11);
  EXPECT_EQ(jittered_retry_after_seconds(just_over, 10, 0.9), 12);

  // 100 s at 50 %: every whole second of [100, 150] is drawn, none outside.
  const service::Decision hundred = denied_for(100 * kMicrosPerSecond);
  std::set<std::int64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::optional<std::int64_t> seconds =
        jittered_retry_after_seconds(hundred, 50, i / 1000.0);
    ASSERT_TRUE(seconds);
    seen.insert(*seconds);
  }
  EXPECT_EQ(seen.size(), 51u);
  EXPECT_EQ(*seen.begin(), 100);
  EXPECT_EQ(*seen.rbegin(), 150);
}

TEST(RetryJitterTest, NeverEarlierNorPresentWhenThereIsNoRetry) {
  EXPECT_EQ(jittered_retry_after_seconds(denied_for(200 * kMicrosPerMilli), 100, 0.9), 1);
  EXPECT_FALSE(jittered_retry_after_seconds(denied_for(std::nullopt), 10, 0.5));
  service::Decision allowed = denied_for(std::nullopt);
  allowed.verdict.allowed = true;
  EXPECT_FALSE(jittered_retry_after_seconds(allowed, 10, 0.5));
}

}  // namespace
}  // namespace sluice::wire
