#include "sluice/policy/describe.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "sluice/time.h"

namespace sluice::policy {
namespace {

using algorithm::Concurrency;
using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::RefillMode;
using algorithm::SlidingLog;
using algorithm::SlidingWindow;
using algorithm::TokenBucket;

struct Case {
  Limit limit;
  std::string words;
};

// One case per algorithm and per parameter value that changes what the limit admits.
const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {TokenBucket{.capacity = 5, .refill = 2, .period = kMicrosPerSecond},
       "token_bucket: 5 at once, refilled 2 per 1s (smooth)"},
      {TokenBucket{.capacity = 10,
                   .refill = 10,
                   .period = kMicrosPerMinute,
                   .refill_mode = RefillMode::kInterval},
       "token_bucket: 10 at once, refilled 10 every 1m all at once (interval)"},
      {TokenBucket{.capacity = 100, .refill = 50, .period = 1'500'000, .initial = 0},
       "token_bucket: 100 at once, refilled 50 per 1500ms (smooth), new subjects start with 0"},
      {TokenBucket{.capacity = 10,
                   .refill = 1,
                   .period = kMicrosPerHour,
                   .refill_mode = RefillMode::kInterval,
                   .initial = 3},
       "token_bucket: 10 at once, refilled 1 every 1h all at once (interval), new subjects start "
       "with 3"},
      // Starting full is the default: saying so would only add words.
      {TokenBucket{.capacity = 5, .refill = 2, .period = kMicrosPerSecond, .initial = 5},
       "token_bucket: 5 at once, refilled 2 per 1s (smooth)"},
      {Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 5},
       "gcra: 10 per 1s, up to 6 at once (burst 5)"},
      {Gcra{.rate = 1, .period = 250'000, .burst = 0},
       "gcra: 1 per 250ms, up to 1 at once (burst 0)"},
      {LeakyBucket{.rate = 10, .period = kMicrosPerSecond, .max_delay = 500'000},
       "leaky_bucket: 10 per 1s paced evenly, waiting up to 500ms"},
      {LeakyBucket{.rate = 3, .period = kMicrosPerMinute, .max_delay = 0},
       "leaky_bucket: 3 per 1m paced evenly, no waiting"},
      {FixedWindow{.limit = 100, .window = kMicrosPerHour}, "fixed_window: 100 per 1h"},
      {SlidingWindow{.limit = 100, .window = kMicrosPerHour},
       "sliding_window: 100 in any 1h (estimated)"},
      {SlidingLog{.limit = 20, .window = 90 * kMicrosPerSecond},
       "sliding_log: 20 in any 90s (exact)"},
      {Concurrency{.limit = 3, .lease_ttl = 30 * kMicrosPerSecond},
       "concurrency: 3 at once, lease 30s"},
  };
  return kCases;
}

TEST(DescribeLimitTest, SaysWhatEachAlgorithmAdmitsInWords) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.words);
    EXPECT_EQ(describe_limit(c.limit), c.words);
  }
}

TEST(DescribeLimitTest, CoversEveryAlgorithm) {
  std::vector<bool> seen(std::variant_size_v<Limit>, false);
  for (const Case& c : cases()) seen[c.limit.index()] = true;
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_TRUE(seen[i]) << "alternative " << i;
}

// Each parameter, changed alone, changes the words: none is left out.
TEST(DescribeLimitTest, EveryParameterShowsInTheWords) {
  const TokenBucket bucket{.capacity = 5, .refill = 2, .period = kMicrosPerSecond};
  const Gcra gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 5};
  const LeakyBucket leaky{.rate = 10, .period = kMicrosPerSecond, .max_delay = 500'000};
  const FixedWindow fixed{.limit = 100, .window = kMicrosPerHour};
  const SlidingWindow sliding{.limit = 100, .window = kMicrosPerHour};
  const SlidingLog log{.limit = 100, .window = kMicrosPerHour};
  const Concurrency concurrency{.limit = 3, .lease_ttl = 30 * kMicrosPerSecond};
  const auto with = [](auto limit, auto change) {
    change(limit);
    return Limit{limit};
  };
  const std::vector<std::pair<Limit, Limit>> pairs = {
      {bucket, with(bucket, [](TokenBucket& p) { p.capacity = 6; })},
      {bucket, with(bucket, [](TokenBucket& p) { p.refill = 3; })},
      {bucket, with(bucket, [](TokenBucket& p) { p.period = kMicrosPerMinute; })},
      {bucket, with(bucket, [](TokenBucket& p) { p.refill_mode = RefillMode::kInterval; })},
      {bucket, with(bucket, [](TokenBucket& p) { p.initial = 4; })},
      {gcra, with(gcra, [](Gcra& p) { p.rate = 11; })},
      {gcra, with(gcra, [](Gcra& p) { p.period = kMicrosPerMinute; })},
      {gcra, with(gcra, [](Gcra& p) { p.burst = 6; })},
      {leaky, with(leaky, [](LeakyBucket& p) { p.rate = 11; })},
      {leaky, with(leaky, [](LeakyBucket& p) { p.period = kMicrosPerMinute; })},
      {leaky, with(leaky, [](LeakyBucket& p) { p.max_delay = 600'000; })},
      {fixed, with(fixed, [](FixedWindow& p) { p.limit = 101; })},
      {fixed, with(fixed, [](FixedWindow& p) { p.window = kMicrosPerDay; })},
      {sliding, with(sliding, [](SlidingWindow& p) { p.limit = 101; })},
      {sliding, with(sliding, [](SlidingWindow& p) { p.window = kMicrosPerDay; })},
      {log, with(log, [](SlidingLog& p) { p.limit = 101; })},
      {log, with(log, [](SlidingLog& p) { p.window = kMicrosPerDay; })},
      {concurrency, with(concurrency, [](Concurrency& p) { p.limit = 4; })},
      {concurrency, with(concurrency, [](Concurrency& p) { p.lease_ttl = kMicrosPerMinute; })},
      // Same numbers, different algorithm: the words tell them apart, not only the name.
      {fixed, sliding},
      {sliding, log},
  };
  // What follows "<algorithm>: ".
  const auto words = [](const Limit& limit) {
    const std::string text = describe_limit(limit);
    return text.substr(text.find(": ") + 2);
  };
  for (const auto& [before, after] : pairs) {
    SCOPED_TRACE(describe_limit(before) + " vs " + describe_limit(after));
    EXPECT_NE(words(before), words(after));
  }
}

TEST(DescribeLimitsTest, JoinsEveryLimitWithSemicolons) {
  EXPECT_EQ(describe_limits({}), "");
  EXPECT_EQ(describe_limits({FixedWindow{.limit = 100, .window = kMicrosPerHour}}),
            "fixed_window: 100 per 1h");
  EXPECT_EQ(describe_limits({TokenBucket{.capacity = 100, .refill = 50, .period = kMicrosPerSecond},
                             FixedWindow{.limit = 1000, .window = kMicrosPerHour}}),
            "token_bucket: 100 at once, refilled 50 per 1s (smooth); fixed_window: 1000 per 1h");
}

}  // namespace
}  // namespace sluice::policy
