// Tests of token_bucket (smooth and interval refill) and gcra: scenario tables at a realistic
// epoch probing every boundary ±1 µs, and rapidcheck properties over random parameters (within
// validate.h's ranges) and random request sequences.
#include "sluice/algorithm/token_bucket.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/algorithm/validate.h"
#include "sluice/time.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {
namespace {

// 2023-11-14T22:13:20Z: large enough that any arithmetic on raw instants would show.
constexpr Micros kEpoch = 1'700'000'000'000'000;

std::string describe(const Verdict& v) {
  std::ostringstream out;
  out << "{allowed=" << v.allowed << " limit=" << v.limit << " remaining=" << v.remaining
      << " retry_after=" << (v.retry_after ? std::to_string(*v.retry_after) : "none")
      << " reset_after=" << v.reset_after
      << " delay=" << (v.delay ? std::to_string(*v.delay) : "none") << "}";
  return out.str();
}

void expect_verdict(const Verdict& actual, const Verdict& expected) {
  EXPECT_EQ(actual.allowed, expected.allowed);
  EXPECT_EQ(actual.limit, expected.limit);
  EXPECT_EQ(actual.remaining, expected.remaining);
  EXPECT_EQ(actual.retry_after, expected.retry_after);
  EXPECT_EQ(actual.reset_after, expected.reset_after);
  EXPECT_EQ(actual.delay, expected.delay);
}

// One request as a store would run it: decide, and charge only an allowed request with cost > 0.
template <typename Params, typename State>
Verdict step(const Params& params, State& state, std::int64_t cost, Micros now) {
  const Verdict verdict = decide(params, state, cost, now);
  if (verdict.allowed && cost > 0) commit(params, state, cost, now);
  return verdict;
}

// ---------------------------------------------------------------------------------------------
// Scenario tables. Rows run in order against one state; `at` is an offset from kEpoch.

struct Row {
  const char* description;
  Micros at;
  std::int64_t cost;
  bool allowed;
  std::int64_t remaining;
  std::optional<Micros> retry_after;
  Micros reset_after;
};

template <typename Params, typename State>
void run_table(const Params& params, State state, std::int64_t limit, std::span<const Row> rows) {
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.description) + " (at +" + std::to_string(row.at) + " µs, cost " +
                 std::to_string(row.cost) + ")");
    const State before = state;
    const Verdict verdict = step(params, state, row.cost, kEpoch + row.at);
    expect_verdict(verdict, {.allowed = row.allowed,
                             .limit = limit,
                             .remaining = row.remaining,
                             .retry_after = row.retry_after,
                             .reset_after = row.reset_after});
    if (!row.allowed || row.cost == 0) {
      EXPECT_TRUE(before == state) << "a denied request or a peek changed the state";
    }
  }
}

TatState smooth_initial(const TokenBucket& params, Micros now) {
  return std::get<TatState>(initial_state(params, now));
}

IntervalBucketState interval_initial(const TokenBucket& params, Micros now) {
  return std::get<IntervalBucketState>(initial_state(params, now));
}

constexpr auto kNever = std::nullopt;

// 3 tokens per second: the emission interval is 333 333.33 µs, so the TAT carries a fraction.
TEST(TokenBucketSmoothTest, FractionalRefillBecomesAvailableAtTheCeilingMicrosecond) {
  const TokenBucket params{.capacity = 3, .refill = 3, .period = kMicrosPerSecond};
  constexpr Micros kDay = kMicrosPerDay;
  const Row rows[] = {
      // description, at, cost, allowed, remaining, retry_after, reset_after
      {"full bucket admits one token", 0, 1, true, 2, kNever, 333'334},
      {"takes the last two at the same instant", 0, 2, true, 0, kNever, 1'000'000},
      {"empty bucket denies until 1e6/3 rounded up", 0, 1, false, 0, 333'334, 1'000'000},
      {"1 µs before the first refilled token", 333'333, 1, false, 0, 1, 666'667},
      {"first refilled token at ceil(333333.33)", 333'334, 1, true, 0, kNever, 1'000'000},
      {"peek on an empty bucket is allowed and reports 0", 333'334, 0, true, 0, kNever, 1'000'000},
      {"1 µs before the second token (TAT 1333333.33)", 666'666, 1, false, 0, 1, 666'668},
      {"second token at ceil(666666.67)", 666'667, 1, true, 0, kNever, 1'000'000},
      {"cost above capacity: denied, never retry", 666'667, 4, false, 0, kNever, 1'000'000},
      {"2/3 token short of full: 2 tokens", 1'666'666, 3, false, 2, 1, 1},
      {"full at reset_after", 1'666'667, 3, true, 0, kNever, 1'000'000},
      {"a day idle never fills past capacity", 2'666'667 + kDay, 4, false, 3, kNever, 0},
      {"peek on a full bucket", 2'666'667 + kDay, 0, true, 3, kNever, 0},
      {"full bucket drained at once", 2'666'667 + kDay, 3, true, 0, kNever, 1'000'000},
  };
  run_table(params, smooth_initial(params, kEpoch), 3, rows);
}

TEST(TokenBucketSmoothTest, InitialTokensOverrideTheFullStart) {
  const TokenBucket params{.capacity = 10, .refill = 1, .period = kMicrosPerSecond, .initial = 0};
  const Row rows[] = {
      {"peek: starts empty", 0, 0, true, 0, kNever, 10'000'000},
      {"first token one period after creation", 0, 1, false, 0, 1'000'000, 10'000'000},
      {"1 µs before it", 999'999, 1, false, 0, 1, 9'000'001},
      {"at creation + period", 1'000'000, 1, true, 0, kNever, 10'000'000},
      {"five tokens need five more periods", 1'000'000, 5, false, 0, 5'000'000, 10'000'000},
      {"1 µs before the fifth", 5'999'999, 5, false, 4, 1, 5'000'001},
      {"five tokens at once", 6'000'000, 5, true, 0, kNever, 10'000'000},
  };
  run_table(params, smooth_initial(params, kEpoch), 10, rows);

  const TokenBucket half{.capacity = 4, .refill = 1, .period = kMicrosPerSecond, .initial = 2};
  const Row half_rows[] = {
      {"initial 2 of 4", 0, 0, true, 2, kNever, 2'000'000},
      {"3 is more than initial", 0, 3, false, 2, 1'000'000, 2'000'000},
      {"2 is granted", 0, 2, true, 0, kNever, 4'000'000},
  };
  run_table(half, smooth_initial(half, kEpoch), 4, half_rows);
}

// With capacity 1 the bucket is full whenever a token is available, so refill arriving between
// the (fractional) instant it fills and the next whole microsecond is capped away: this is the
// definition (tokens capped at C), not drift in the arithmetic.
TEST(TokenBucketSmoothTest, CapacityOneCannotBankRefillWhileFull) {
  const TokenBucket params{.capacity = 1, .refill = 3, .period = kMicrosPerSecond};
  const Row rows[] = {
      {"first", 0, 1, true, 0, kNever, 333'334},
      {"1 µs before 333333.33 rounds up", 333'333, 1, false, 0, 1, 1},
      {"second, bucket restarts at 333334", 333'334, 1, true, 0, kNever, 333'334},
      {"1 µs early", 666'667, 1, false, 0, 1, 1},
      {"third", 666'668, 1, true, 0, kNever, 333'334},
      {"fourth only at 1000001.33 rounded up", 1'000'000, 1, false, 0, 2, 2},
      {"fourth", 1'000'002, 1, true, 0, kNever, 333'334},
  };
  run_table(params, smooth_initial(params, kEpoch), 1, rows);
}

// Interval refill: 2 tokens at once every 10 s counted from the last refill (the anchor).
TEST(TokenBucketIntervalTest, RefillsAtAnchorPlusWholePeriodsNotOneMicrosecondEarlier) {
  const TokenBucket params{.capacity = 5,
                           .refill = 2,
                           .period = 10 * kMicrosPerSecond,
                           .refill_mode = RefillMode::kInterval};
  const Row rows[] = {
      {"full bucket drained at once", 0, 5, true, 0, kNever, 30'000'000},
      {"empty: first refill one period after the drain", 0, 1, false, 0, 10'000'000, 30'000'000},
      {"1 µs before the first refill", 9'999'999, 1, false, 0, 1, 20'000'001},
      {"peek at anchor + P sees the refill", 10'000'000, 0, true, 2, kNever, 20'000'000},
      {"3 tokens need a second refill", 10'000'000, 3, false, 2, 10'000'000, 20'000'000},
      {"takes both refilled tokens", 10'000'000, 2, true, 0, kNever, 30'000'000},
      {"1 µs before anchor + 2P", 19'999'999, 1, false, 0, 1, 20'000'001},
      {"second refill at anchor + 2P", 20'000'000, 1, true, 1, kNever, 20'000'000},
      {"peek 1 µs before anchor + 4P: one more refill", 39'999'999, 0, true, 3, kNever, 1},
      {"full at anchor + 4P", 40'000'000, 5, true, 0, kNever, 30'000'000},
      {"cost above capacity: denied, never retry", 40'000'000, 6, false, 0, kNever, 30'000'000},
  };
  run_table(params, interval_initial(params, kEpoch), 5, rows);
}

// While full the refill clock is idle: the first request finding the bucket full restarts it,
// so refills are not "saved up" on the old grid.
TEST(TokenBucketIntervalTest, RefillClockRestartsAtFirstRequestFindingBucketFull) {
  const TokenBucket params{.capacity = 5,
                           .refill = 2,
                           .period = 10 * kMicrosPerSecond,
                           .refill_mode = RefillMode::kInterval};
  const Row rows[] = {
      {"drained at creation", 0, 5, true, 0, kNever, 30'000'000},
      {"full since +30 s; drained at +75 s restarts the clock", 75'000'000, 5, true, 0, kNever,
       30'000'000},
      {"no refill on the old grid (+80 s)", 80'000'000, 1, false, 0, 5'000'000, 25'000'000},
      {"1 µs before restart + P", 84'999'999, 1, false, 0, 1, 20'000'001},
      {"refill at restart + P", 85'000'000, 2, true, 0, kNever, 30'000'000},
  };
  run_table(params, interval_initial(params, kEpoch), 5, rows);
}

TEST(TokenBucketIntervalTest, InitialTokensOverrideTheFullStart) {
  const TokenBucket params{.capacity = 5,
                           .refill = 2,
                           .period = 10 * kMicrosPerSecond,
                           .refill_mode = RefillMode::kInterval,
                           .initial = 1};
  const Row rows[] = {
      {"peek: starts with the initial token", 0, 0, true, 1, kNever, 20'000'000},
      {"2 waits for the first refill", 0, 2, false, 1, 10'000'000, 20'000'000},
      {"1 µs before it", 9'999'999, 2, false, 1, 1, 10'000'001},
      {"initial + one refill", 10'000'000, 3, true, 0, kNever, 30'000'000},
  };
  run_table(params, interval_initial(params, kEpoch), 5, rows);
}

// Refill larger than capacity: one tick fills the bucket (capped), and restarts the clock.
TEST(TokenBucketIntervalTest, RefillAboveCapacityIsCapped) {
  const TokenBucket params{.capacity = 3,
                           .refill = 10,
                           .period = kMicrosPerSecond,
                           .refill_mode = RefillMode::kInterval};
  const Row rows[] = {
      {"drain", 0, 2, true, 1, kNever, 1'000'000},
      {"4 is above capacity", 0, 4, false, 1, kNever, 1'000'000},
      {"3 needs the refill", 999'999, 3, false, 1, 1, 1},
      {"refill caps at 3", 1'000'000, 0, true, 3, kNever, 0},
      {"drain all", 1'500'000, 3, true, 0, kNever, 1'000'000},
      {"next refill one period after the restart", 2'499'999, 1, false, 0, 1, 1},
      {"refilled", 2'500'000, 3, true, 0, kNever, 1'000'000},
  };
  run_table(params, interval_initial(params, kEpoch), 3, rows);
}

// 7 per second, burst 2 (limit 3): the emission interval is 142 857.14 µs.
TEST(GcraTest, FractionalEmissionIntervalBoundariesWithBurst) {
  const Gcra params{.rate = 7, .period = kMicrosPerSecond, .burst = 2};
  const Row rows[] = {
      {"burst + 1 available: first", 0, 1, true, 2, kNever, 142'858},
      {"the other two", 0, 2, true, 0, kNever, 428'572},
      {"exhausted: next at ceil(1e6/7)", 0, 1, false, 0, 142'858, 428'572},
      {"1 µs before", 142'857, 1, false, 0, 1, 285'715},
      {"at retry_after", 142'858, 1, true, 0, kNever, 428'571},
      {"cost above burst + 1: never", 142'858, 4, false, 0, kNever, 428'571},
      {"after an hour idle: the whole burst", 3'600'000'000, 3, true, 0, kNever, 428'572},
  };
  run_table(params, initial_state(params, kEpoch), 3, rows);
}

TEST(GcraTest, DeniesOneMicrosecondBeforeRetryAfter) {
  const Gcra params{.rate = 1, .period = kMicrosPerSecond, .burst = 0};
  const Row rows[] = {
      {"first cell", 0, 1, true, 0, kNever, 1'000'000},
      {"peek reports nothing left", 0, 0, true, 0, kNever, 1'000'000},
      {"1 µs before the TAT", 999'999, 1, false, 0, 1, 1},
      {"at the TAT", 1'000'000, 1, true, 0, kNever, 1'000'000},
      {"cost 2 with burst 0: never", 1'000'000, 2, false, 0, kNever, 1'000'000},
  };
  run_table(params, initial_state(params, kEpoch), 1, rows);
}

// ---------------------------------------------------------------------------------------------
// Greedy clients over long horizons: retry exactly at retry_after, drain, repeat. After every
// drain the total admitted must equal the definition exactly, so any drift would show.

struct RateCase {
  const char* name;
  std::int64_t capacity;
  std::int64_t refill;
  Micros period;
  Micros horizon;
};

// Smooth bucket total after draining at `now`: C + floor(elapsed · R / P). Exact as long as the
// bucket never sits at capacity between drains, i.e. R/P ≤ C − 1 per µs (the greedy client comes
// back within 1 µs of a token, holding < 1 token): true for every case below.
std::int64_t smooth_total(std::int64_t capacity, std::int64_t refill, Micros period,
                          Micros elapsed) {
  return capacity + saturate(floor_div(Int128{elapsed} * refill, Int128{period}));
}

template <typename Params>
void expect_greedy_gets_exactly(const Params& params, std::int64_t capacity, std::int64_t refill,
                                Micros period, Micros horizon) {
  TatState state{.tat = kEpoch, .fraction = 0};  // initial_state of both gcra and a full bucket
  Micros now = kEpoch;
  std::int64_t admitted = 0;
  std::int64_t drains = 0;
  while (now <= kEpoch + horizon) {
    const Verdict verdict = step(params, state, 1, now);
    if (verdict.allowed) {
      ASSERT_LE(++admitted, smooth_total(capacity, refill, period, now - kEpoch));
      continue;
    }
    ++drains;
    ASSERT_EQ(admitted, smooth_total(capacity, refill, period, now - kEpoch))
        << "after draining at +" << (now - kEpoch) << " µs";
    ASSERT_TRUE(verdict.retry_after.has_value());
    ASSERT_GE(*verdict.retry_after, 1);
    now += *verdict.retry_after;
  }
  EXPECT_GT(drains, 100);
}

const RateCase kSmoothRates[] = {
    {"1 per day", 2, 1, kMicrosPerDay, 1'000 * kMicrosPerDay},
    {"3 per day", 2, 3, kMicrosPerDay, 1'000 * kMicrosPerDay},
    {"7 per second", 5, 7, kMicrosPerSecond, 1'000 * kMicrosPerSecond},
    {"3 per second", 2, 3, kMicrosPerSecond, 3'000 * kMicrosPerSecond},
    {"1000 per minute", 10, 1'000, kMicrosPerMinute, 20 * kMicrosPerMinute},
    {"999983 per second", 2, 999'983, kMicrosPerSecond, 20'000},
    {"1000000 per second", 2, 1'000'000, kMicrosPerSecond, 20'000},
    {"1 per microsecond", 2, 1, 1, 20'000},
    {"5 per 3 microseconds", 10, 5, 3, 20'000},
    {"100 per hour, capacity 100", 100, 100, kMicrosPerHour, 200 * kMicrosPerHour},
};

TEST(TokenBucketSmoothTest, GreedyClientGetsExactlyConfiguredRateWithoutDrift) {
  for (const RateCase& c : kSmoothRates) {
    SCOPED_TRACE(c.name);
    const TokenBucket params{.capacity = c.capacity, .refill = c.refill, .period = c.period};
    ASSERT_TRUE(validate_limit(params, "").empty());
    expect_greedy_gets_exactly(params, c.capacity, c.refill, c.period, c.horizon);
  }
}

TEST(GcraTest, GreedyClientGetsExactlyConfiguredRateWithoutDrift) {
  for (const RateCase& c : kSmoothRates) {
    SCOPED_TRACE(c.name);
    const Gcra params{.rate = c.refill, .period = c.period, .burst = c.capacity - 1};
    ASSERT_TRUE(validate_limit(params, "").empty());
    expect_greedy_gets_exactly(params, c.capacity, c.refill, c.period, c.horizon);
  }
}

// Interval bucket total after draining at `now`: C + min(R, C) · floor(elapsed / P). The greedy
// client comes back exactly at each refill, so the clock never idles and never restarts off-grid.
TEST(TokenBucketIntervalTest, GreedyClientGetsExactlyConfiguredRateWithoutDrift) {
  const RateCase cases[] = {
      {"2 per 10 s, capacity 5", 5, 2, 10 * kMicrosPerSecond, 10'000 * kMicrosPerSecond},
      {"10 per second, capacity 3 (refill capped)", 3, 10, kMicrosPerSecond,
       5'000 * kMicrosPerSecond},
      {"1 per day", 1, 1, kMicrosPerDay, 3'000 * kMicrosPerDay},
      {"7 per microsecond, capacity 100", 100, 7, 1, 5'000},
      {"3 per 7 µs", 3, 3, 7, 20'000},
  };
  for (const RateCase& c : cases) {
    SCOPED_TRACE(c.name);
    const TokenBucket params{.capacity = c.capacity,
                             .refill = c.refill,
                             .period = c.period,
                             .refill_mode = RefillMode::kInterval};
    ASSERT_TRUE(validate_limit(params, "").empty());
    IntervalBucketState state = interval_initial(params, kEpoch);
    Micros now = kEpoch;
    std::int64_t admitted = 0;
    std::int64_t drains = 0;
    while (now <= kEpoch + c.horizon) {
      const std::int64_t expected =
          c.capacity + std::min(c.refill, c.capacity) * ((now - kEpoch) / c.period);
      const Verdict verdict = step(params, state, 1, now);
      if (verdict.allowed) {
        ASSERT_LE(++admitted, expected);
        continue;
      }
      ++drains;
      ASSERT_EQ(admitted, expected) << "after draining at +" << (now - kEpoch) << " µs";
      ASSERT_TRUE(verdict.retry_after.has_value());
      ASSERT_GE(*verdict.retry_after, 1);
      now += *verdict.retry_after;
    }
    EXPECT_GT(drains, 100);
  }
}

// ---------------------------------------------------------------------------------------------
// Property tests. Generators stay inside what validate_limit accepts.

namespace gen = rc::gen;

TokenBucket draw_bucket(RefillMode mode, bool with_initial) {
  TokenBucket params{
      .capacity =
          *gen::weightedOneOf<std::int64_t>({{4, gen::inRange<std::int64_t>(1, 6)},
                                             {2, gen::inRange<std::int64_t>(1, 100)},
                                             {1, gen::inRange<std::int64_t>(1, 1'000'001)}}),
      .refill = *gen::weightedOneOf<std::int64_t>(
          {{2, gen::inRange<std::int64_t>(1, 11)},
           {1, gen::element<std::int64_t>(3, 7, 999'983, 1'000'000)},
           {1, gen::inRange<std::int64_t>(1, 1'000'001)}}),
      .period =
          *gen::weightedOneOf<Micros>({{2, gen::element<Micros>(1, 7, 1'000, kMicrosPerSecond,
                                                                kMicrosPerMinute, kMicrosPerDay)},
                                       {2, gen::inRange<Micros>(1, 1'000)},
                                       {2, gen::inRange<Micros>(1, 100 * kMicrosPerSecond)}}),
      .refill_mode = mode};
  if (with_initial && *gen::inRange(0, 3) == 0) {
    params.initial = *gen::inRange<std::int64_t>(0, params.capacity + 1);
  }
  RC_PRE(validate_limit(params, "").empty());
  return params;
}

Gcra draw_gcra() {
  const Gcra params{
      .rate = *gen::weightedOneOf<std::int64_t>(
          {{2, gen::inRange<std::int64_t>(1, 11)},
           {1, gen::element<std::int64_t>(3, 7, 999'983, 1'000'000)},
           {1, gen::inRange<std::int64_t>(1, 1'000'001)}}),
      .period = *gen::weightedOneOf<Micros>(
          {{2,
            gen::element<Micros>(1, 7, 1'000, kMicrosPerSecond, kMicrosPerMinute, kMicrosPerDay)},
           {2, gen::inRange<Micros>(1, 1'000)},
           {2, gen::inRange<Micros>(1, 100 * kMicrosPerSecond)}}),
      .burst = *gen::weightedOneOf<std::int64_t>({{4, gen::inRange<std::int64_t>(0, 6)},
                                                  {2, gen::inRange<std::int64_t>(0, 100)},
                                                  {1, gen::inRange<std::int64_t>(0, 1'000'001)}})};
  RC_PRE(validate_limit(params, "").empty());
  return params;
}

// Costs: peeks, unit requests, anything up to the limit, and a little beyond it.
std::int64_t draw_cost(std::int64_t limit) {
  return *gen::weightedOneOf<std::int64_t>(
      {{1, gen::just<std::int64_t>(0)},
       {4, gen::just<std::int64_t>(1)},
       {3, gen::inRange<std::int64_t>(0, std::min<std::int64_t>(limit, 10) + 1)},
       {2, gen::inRange<std::int64_t>(0, limit + 1)},
       {1, gen::inRange<std::int64_t>(limit + 1, limit + 3)}});
}

// Gaps: none, a few µs, around the emission interval and the period, and several periods.
Micros draw_gap(std::int64_t rate, Micros period) {
  const Micros interval = std::max<Micros>(1, period / rate);
  return *gen::weightedOneOf<Micros>({{3, gen::just<Micros>(0)},
                                      {2, gen::inRange<Micros>(1, 4)},
                                      {3, gen::inRange<Micros>(0, 2 * interval + 2)},
                                      {2, gen::element<Micros>(interval - 1, interval, interval + 1,
                                                               period - 1, period, period + 1)},
                                      {1, gen::inRange<Micros>(0, 3 * period + 2)}});
}

// How far back a skewed clock reads, for "time going backwards".
Micros draw_backwards(Micros period) {
  return *gen::weightedOneOf<Micros>({{2, gen::inRange<Micros>(1, 4)},
                                      {2, gen::inRange<Micros>(1, period + 2)},
                                      {1, gen::inRange<Micros>(1, 30 * kMicrosPerDay)}});
}

// Adapters giving the three algorithms of this file one shape for the generic checks.
struct Smooth {
  TokenBucket params;
  using State = TatState;
  State initial(Micros now) const { return smooth_initial(params, now); }
  std::int64_t limit() const { return params.capacity; }
  std::int64_t rate() const { return params.refill; }
  Micros period() const { return params.period; }
};

struct Interval {
  TokenBucket params;
  using State = IntervalBucketState;
  State initial(Micros now) const { return interval_initial(params, now); }
  std::int64_t limit() const { return params.capacity; }
  std::int64_t rate() const { return params.refill; }
  Micros period() const { return params.period; }
};

struct GcraAlgo {
  Gcra params;
  using State = TatState;
  State initial(Micros now) const { return initial_state(params, now); }
  std::int64_t limit() const { return params.burst + 1; }
  std::int64_t rate() const { return params.rate; }
  Micros period() const { return params.period; }
};

template <typename State>
struct Event {
  Micros at = 0;
  std::int64_t cost = 0;
  Verdict verdict;
  State before;
  State after;
};

// A random request sequence with non-decreasing times; sometimes the client comes back exactly
// at (or 1 µs around) the last retry_after. The state is created at the first request.
template <typename Algo>
std::vector<Event<typename Algo::State>> drive(const Algo& algo) {
  const int steps = *gen::inRange(1, 80);
  Micros now = kEpoch + *gen::inRange<Micros>(0, kMicrosPerDay);
  typename Algo::State state = algo.initial(now);
  std::vector<Event<typename Algo::State>> events;
  std::optional<Micros> last_retry;
  for (int i = 0; i < steps; ++i) {
    if (i > 0) {
      if (last_retry && *gen::inRange(0, 3) == 0) {
        now += *last_retry + *gen::inRange<Micros>(-1, 2);
      } else {
        now += draw_gap(algo.rate(), algo.period());
      }
    }
    Event<typename Algo::State> event{.at = now, .cost = draw_cost(algo.limit()), .before = state};
    event.verdict = step(algo.params, state, event.cost, now);
    event.after = state;
    last_retry = event.verdict.retry_after;
    events.push_back(event);
  }
  return events;
}

// Per-verdict invariants shared by all buckets.
template <typename Algo>
void check_verdict_shape(const Algo& algo, std::int64_t cost, const Verdict& v) {
  RC_ASSERT(v.limit == algo.limit());
  RC_ASSERT(v.remaining >= 0);
  RC_ASSERT(v.remaining <= algo.limit());
  RC_ASSERT(v.reset_after >= 0);
  RC_ASSERT(!v.delay.has_value());
  if (v.allowed) RC_ASSERT(!v.retry_after.has_value());
  if (cost == 0) RC_ASSERT(v.allowed);  // a bucket always holds >= 0 tokens
  if (cost > algo.limit()) RC_ASSERT(!v.allowed && !v.retry_after.has_value());
  if (!v.allowed && cost <= algo.limit()) RC_ASSERT(v.retry_after.has_value());
  if (v.retry_after) RC_ASSERT(*v.retry_after >= 1);
}

// b. retry_after exact: on the unchanged state the same request is allowed at now + r and denied
// at now + r − 1.
template <typename Algo>
void check_retry_after_exact(const Algo& algo) {
  for (const auto& e : drive(algo)) {
    check_verdict_shape(algo, e.cost, e.verdict);
    if (!e.verdict.retry_after) continue;
    const Micros r = *e.verdict.retry_after;
    RC_LOG() << "at " << e.at << " cost " << e.cost << " -> " << describe(e.verdict) << "\n";
    RC_ASSERT(decide(algo.params, e.before, e.cost, e.at + r).allowed);
    RC_ASSERT(!decide(algo.params, e.before, e.cost, e.at + r - 1).allowed);
  }
}

// c. Denials and peeks leave the state equal, and replaying only the charged requests gives the
// same verdicts and the same final state (they had no effect whatsoever).
template <typename Algo>
void check_denials_and_peeks_change_nothing(const Algo& algo) {
  const auto events = drive(algo);
  for (const auto& e : events) {
    if (!e.verdict.allowed || e.cost == 0) RC_ASSERT(e.before == e.after);
  }
  typename Algo::State replay = algo.initial(events.front().at);
  for (const auto& e : events) {
    if (!e.verdict.allowed || e.cost == 0) continue;
    const Verdict again = step(algo.params, replay, e.cost, e.at);
    if (again != e.verdict) RC_FAIL(describe(again) + " != " + describe(e.verdict));
  }
  RC_ASSERT(replay == events.back().after);
}

// d. A clock reading earlier than the last commit never sees more capacity: fewer or equal
// tokens, and nothing allowed earlier that would be denied at the later time.
template <typename Algo>
void check_earlier_clock_never_creates_capacity(const Algo& algo) {
  for (const auto& e : drive(algo)) {
    if (!e.verdict.allowed || e.cost == 0) continue;
    const Micros earlier = e.at - draw_backwards(algo.period());
    const Verdict peek_then = decide(algo.params, e.after, 0, earlier);
    const Verdict peek_now = decide(algo.params, e.after, 0, e.at);
    RC_ASSERT(peek_then.remaining <= peek_now.remaining);
    const std::int64_t cost = draw_cost(algo.limit());
    if (decide(algo.params, e.after, cost, earlier).allowed) {
      RC_ASSERT(decide(algo.params, e.after, cost, e.at).allowed);
    }
  }
}

// `remaining` is exact: right after a request, a request for exactly `remaining` units at the same
// instant is allowed and one for `remaining + 1` is not (unless that exceeds the limit anyway).
template <typename Algo>
void check_remaining_exact(const Algo& algo) {
  for (const auto& e : drive(algo)) {
    const std::int64_t remaining = e.verdict.remaining;
    RC_ASSERT(decide(algo.params, e.after, remaining, e.at).allowed);
    RC_ASSERT(!decide(algo.params, e.after, remaining + 1, e.at).allowed);
  }
}

// reset_after counts down to the instant the bucket is full again, which is also when the stored
// state expires: a peek then sees `limit` tokens, 1 µs earlier it does not.
template <typename Algo>
void check_reset_after_is_when_full_again(const Algo& algo) {
  for (const auto& e : drive(algo)) {
    const Micros r = e.verdict.reset_after;
    RC_ASSERT(r == std::max<Micros>(0, expires_at(algo.params, e.after) - e.at));
    RC_ASSERT(decide(algo.params, e.after, 0, e.at + r).remaining == algo.limit());
    if (r > 0) RC_ASSERT(decide(algo.params, e.after, 0, e.at + r - 1).remaining < algo.limit());
  }
}

// g. From expires_at on, the stored state decides exactly like a fresh one (so a store may drop
// it then). Only for buckets without an `initial` override, which start full.
template <typename Algo>
void check_expired_state_decides_like_initial(const Algo& algo) {
  for (const auto& e : drive(algo)) {
    const Micros expiry = expires_at(algo.params, e.after);
    const Micros later =
        expiry + *gen::weightedOneOf<Micros>({{2, gen::just<Micros>(0)},
                                              {1, gen::inRange<Micros>(1, 3)},
                                              {1, gen::inRange<Micros>(0, 3 * algo.period() + 1)}});
    const std::int64_t cost = draw_cost(algo.limit());
    for (const Micros t : {expiry, later}) {
      const Verdict stored = decide(algo.params, e.after, cost, t);
      const Verdict fresh = decide(algo.params, algo.initial(t), cost, t);
      if (stored != fresh) {
        RC_FAIL("at expires_at + " + std::to_string(t - expiry) + ": " + describe(stored) +
                " != " + describe(fresh));
      }
    }
  }
}

// a (smooth). The bucket's level is real-valued, ≤ C, and grows by R/P per µs, so over
// [t_a, t_k] at most C + (t_k − t_a)·R/P tokens exist; admitted cost is an integer, hence
//   admitted · P ≤ C · P + (t_k − t_a) · R,
// and from creation at t_c with `initial` I tokens: admitted · P ≤ I · P + (t_k − t_c) · R.
template <typename Algo>
void check_smooth_bound(const Algo& algo, std::int64_t capacity, std::int64_t initial) {
  const auto events = drive(algo);
  const Micros created = events.front().at;
  std::vector<std::pair<Micros, std::int64_t>> admitted;
  for (const auto& e : events) {
    check_verdict_shape(algo, e.cost, e.verdict);
    if (e.verdict.allowed && e.cost > 0) admitted.emplace_back(e.at, e.cost);
  }
  const Int128 p = algo.period();
  const Int128 r = algo.rate();
  Int128 since_creation = 0;
  for (std::size_t k = 0; k < admitted.size(); ++k) {
    since_creation += admitted[k].second;
    RC_ASSERT(since_creation * p <= Int128{initial} * p + Int128{admitted[k].first - created} * r);
    Int128 sum = 0;
    for (std::size_t a = k + 1; a-- > 0;) {
      sum += admitted[a].second;
      RC_ASSERT(sum * p <=
                Int128{capacity} * p + Int128{admitted[k].first - admitted[a].first} * r);
    }
  }
}

// ---- smooth token_bucket ----

RC_GTEST_PROP(TokenBucketSmoothProperty, NeverAdmitsMoreThanCapacityPlusRefillOverAnyInterval, ()) {
  const Smooth algo{draw_bucket(RefillMode::kSmooth, /*with_initial=*/true)};
  check_smooth_bound(algo, algo.params.capacity,
                     algo.params.initial.value_or(algo.params.capacity));
}

RC_GTEST_PROP(TokenBucketSmoothProperty, RetryAfterIsExact, ()) {
  check_retry_after_exact(Smooth{draw_bucket(RefillMode::kSmooth, true)});
}

RC_GTEST_PROP(TokenBucketSmoothProperty, DenialsAndPeeksLeaveStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing(Smooth{draw_bucket(RefillMode::kSmooth, true)});
}

RC_GTEST_PROP(TokenBucketSmoothProperty, EarlierClockNeverCreatesCapacity, ()) {
  check_earlier_clock_never_creates_capacity(Smooth{draw_bucket(RefillMode::kSmooth, true)});
}

RC_GTEST_PROP(TokenBucketSmoothProperty, RemainingIsExactlyWhatIsStillGrantableNow, ()) {
  check_remaining_exact(Smooth{draw_bucket(RefillMode::kSmooth, true)});
}

RC_GTEST_PROP(TokenBucketSmoothProperty, ResetAfterIsWhenBucketIsFullAgain, ()) {
  check_reset_after_is_when_full_again(Smooth{draw_bucket(RefillMode::kSmooth, true)});
}

RC_GTEST_PROP(TokenBucketSmoothProperty, ExpiredStateDecidesLikeInitialState, ()) {
  check_expired_state_decides_like_initial(Smooth{draw_bucket(RefillMode::kSmooth, false)});
}

// f. A client polling at random gaps and draining each time gets exactly C + floor(elapsed·R/P):
// gaps ≤ (C − 1)·P/R keep the bucket below capacity (< 1 token after a drain), so no refill is
// capped away.
RC_GTEST_PROP(TokenBucketSmoothProperty, RandomPollingClientGetsExactlyConfiguredRate, ()) {
  const TokenBucket params{
      .capacity = *gen::inRange<std::int64_t>(2, 50),
      .refill = *gen::weightedOneOf<std::int64_t>(
          {{2, gen::inRange<std::int64_t>(1, 11)},
           {1, gen::element<std::int64_t>(3, 7, 999'983, 1'000'000)}}),
      .period = *gen::element<Micros>(1, 7, 1'000, kMicrosPerSecond, kMicrosPerDay)};
  const Micros max_gap = std::min<Micros>(
      saturate(Int128{params.capacity - 1} * params.period / params.refill), 10 * params.period);
  RC_PRE(max_gap >= 1);
  RC_PRE(validate_limit(params, "").empty());
  TatState state = smooth_initial(params, kEpoch);
  Micros now = kEpoch;
  std::int64_t admitted = 0;
  for (int poll = 0; poll < 100; ++poll) {
    while (step(params, state, 1, now).allowed) RC_ASSERT(++admitted <= 200 * params.capacity);
    RC_ASSERT(admitted ==
              smooth_total(params.capacity, params.refill, params.period, now - kEpoch));
    now += *gen::inRange<Micros>(1, max_gap + 1);
  }
}

// ---- interval token_bucket ----

// a (interval). Tokens never exceed C, and refill ticks are at least P apart (on the grid
// anchor + k·P, and a restart at the first request finding the bucket full is ≥ P after the tick
// that filled it). So over [t_a, t_k], L = t_k − t_a, admitted ≤ level(t_a) + R·n with n ticks in
// (t_a, t_k], n ≤ ceil(L/P). If n = ceil(L/P) and P ∤ L, the first tick is < t_a + P after t_a,
// which needs the bucket not full at t_a (a request finding it full at or after t_a would have
// restarted the clock), so level(t_a) ≤ C − 1. Hence
//   admitted ≤ C + R·L/P                (P | L)
//   admitted ≤ C − 1 + R·ceil(L/P)      (P ∤ L)
// From creation at t_c (anchor t_c, `initial` I tokens) the first tick is ≥ t_c + P:
//   admitted ≤ I + R·floor((t_k − t_c)/P).
RC_GTEST_PROP(TokenBucketIntervalProperty, NeverAdmitsMoreThanCapacityPlusRefillTicks, ()) {
  const Interval algo{draw_bucket(RefillMode::kInterval, true)};
  const TokenBucket& p = algo.params;
  const auto events = drive(algo);
  const Micros created = events.front().at;
  std::vector<std::pair<Micros, std::int64_t>> admitted;
  for (const auto& e : events) {
    check_verdict_shape(algo, e.cost, e.verdict);
    if (e.verdict.allowed && e.cost > 0) admitted.emplace_back(e.at, e.cost);
  }
  const std::int64_t initial = p.initial.value_or(p.capacity);
  Int128 since_creation = 0;
  for (std::size_t k = 0; k < admitted.size(); ++k) {
    since_creation += admitted[k].second;
    RC_ASSERT(since_creation <=
              Int128{initial} + Int128{p.refill} * ((admitted[k].first - created) / p.period));
    Int128 sum = 0;
    for (std::size_t a = k + 1; a-- > 0;) {
      sum += admitted[a].second;
      const Micros length = admitted[k].first - admitted[a].first;
      const Int128 bound =
          length % p.period == 0
              ? Int128{p.capacity} + Int128{p.refill} * (length / p.period)
              : Int128{p.capacity} - 1 + Int128{p.refill} * ceil_div(length, p.period);
      RC_ASSERT(sum <= bound);
    }
  }
}

RC_GTEST_PROP(TokenBucketIntervalProperty, RetryAfterIsExact, ()) {
  check_retry_after_exact(Interval{draw_bucket(RefillMode::kInterval, true)});
}

RC_GTEST_PROP(TokenBucketIntervalProperty, DenialsAndPeeksLeaveStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing(Interval{draw_bucket(RefillMode::kInterval, true)});
}

RC_GTEST_PROP(TokenBucketIntervalProperty, EarlierClockNeverCreatesCapacity, ()) {
  check_earlier_clock_never_creates_capacity(Interval{draw_bucket(RefillMode::kInterval, true)});
}

RC_GTEST_PROP(TokenBucketIntervalProperty, RemainingIsExactlyWhatIsStillGrantableNow, ()) {
  check_remaining_exact(Interval{draw_bucket(RefillMode::kInterval, true)});
}

RC_GTEST_PROP(TokenBucketIntervalProperty, ResetAfterIsWhenBucketIsFullAgain, ()) {
  check_reset_after_is_when_full_again(Interval{draw_bucket(RefillMode::kInterval, true)});
}

RC_GTEST_PROP(TokenBucketIntervalProperty, ExpiredStateDecidesLikeInitialState, ()) {
  check_expired_state_decides_like_initial(Interval{draw_bucket(RefillMode::kInterval, false)});
}

// f. With R < C and polls at most P apart, at most one tick falls between polls, so the bucket
// is never full after the first drain, the grid never restarts, and a draining client gets
// exactly C + R·floor(elapsed / P).
RC_GTEST_PROP(TokenBucketIntervalProperty, RandomPollingClientGetsExactlyConfiguredRate, ()) {
  const std::int64_t capacity = *gen::inRange<std::int64_t>(2, 50);
  const TokenBucket params{
      .capacity = capacity,
      .refill = *gen::inRange<std::int64_t>(1, capacity),
      .period = *gen::element<Micros>(1, 7, 1'000, kMicrosPerSecond, kMicrosPerDay),
      .refill_mode = RefillMode::kInterval};
  RC_PRE(validate_limit(params, "").empty());
  IntervalBucketState state = interval_initial(params, kEpoch);
  Micros now = kEpoch;
  std::int64_t admitted = 0;
  for (int poll = 0; poll < 100; ++poll) {
    while (step(params, state, 1, now).allowed) RC_ASSERT(++admitted <= 200 * params.capacity);
    RC_ASSERT(admitted == params.capacity + params.refill * ((now - kEpoch) / params.period));
    now += *gen::inRange<Micros>(0, params.period + 1);
  }
}

// ---- gcra ----

RC_GTEST_PROP(GcraProperty, NeverAdmitsMoreThanBurstPlusOnePlusRateOverAnyInterval, ()) {
  const GcraAlgo algo{draw_gcra()};
  check_smooth_bound(algo, algo.limit(), algo.limit());
}

RC_GTEST_PROP(GcraProperty, RetryAfterIsExact, ()) {
  check_retry_after_exact(GcraAlgo{draw_gcra()});
}

RC_GTEST_PROP(GcraProperty, DenialsAndPeeksLeaveStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing(GcraAlgo{draw_gcra()});
}

RC_GTEST_PROP(GcraProperty, EarlierClockNeverCreatesCapacity, ()) {
  check_earlier_clock_never_creates_capacity(GcraAlgo{draw_gcra()});
}

RC_GTEST_PROP(GcraProperty, RemainingIsExactlyWhatIsStillGrantableNow, ()) {
  check_remaining_exact(GcraAlgo{draw_gcra()});
}

RC_GTEST_PROP(GcraProperty, ResetAfterIsWhenBucketIsFullAgain, ()) {
  check_reset_after_is_when_full_again(GcraAlgo{draw_gcra()});
}

RC_GTEST_PROP(GcraProperty, ExpiredStateDecidesLikeInitialState, ()) {
  check_expired_state_decides_like_initial(GcraAlgo{draw_gcra()});
}

// e. gcra{R, P, B} is decision-for-decision the smooth token_bucket{C = B + 1, R, P}: every
// Verdict field, and the stored TAT, over the same random sequence.
RC_GTEST_PROP(GcraProperty, DecidesExactlyLikeSmoothTokenBucketWithCapacityBurstPlusOne, ()) {
  const Gcra gcra = draw_gcra();
  const TokenBucket bucket{.capacity = gcra.burst + 1, .refill = gcra.rate, .period = gcra.period};
  RC_ASSERT(validate_limit(bucket, "").empty());
  const int steps = *gen::inRange(1, 80);
  Micros now = kEpoch + *gen::inRange<Micros>(0, kMicrosPerDay);
  TatState gcra_state = initial_state(gcra, now);
  TatState bucket_state = smooth_initial(bucket, now);
  RC_ASSERT(gcra_state == bucket_state);
  for (int i = 0; i < steps; ++i) {
    now += draw_gap(gcra.rate, gcra.period);
    const std::int64_t cost = draw_cost(gcra.burst + 1);
    const Verdict from_gcra = step(gcra, gcra_state, cost, now);
    const Verdict from_bucket = step(bucket, bucket_state, cost, now);
    if (from_gcra != from_bucket) {
      RC_FAIL("gcra " + describe(from_gcra) + " != token_bucket " + describe(from_bucket));
    }
    RC_ASSERT(gcra_state == bucket_state);
    RC_ASSERT(expires_at(gcra, gcra_state) == expires_at(bucket, bucket_state));
  }
}

// A clock that jitters backwards as well as forwards still never grants more than the bucket
// holds: the TAT only moves forward, by cost·P/R per charge, from the creation instant t_c to at
// most max_t + C·P/R, so admitted · P ≤ C · P + (max_t − t_c) · R.
RC_GTEST_PROP(GcraProperty, JitteryClockNeverExceedsBound, ()) {
  const Gcra params = draw_gcra();
  const std::int64_t limit = params.burst + 1;
  const Micros created = kEpoch;
  TatState state = initial_state(params, created);
  Micros now = created;
  Micros latest = created;
  Int128 admitted = 0;
  const int steps = *gen::inRange(1, 80);
  for (int i = 0; i < steps; ++i) {
    now +=
        *gen::weightedOneOf<Micros>({{3, gen::just<Micros>(draw_gap(params.rate, params.period))},
                                     {1, gen::just<Micros>(-draw_backwards(params.period))}});
    latest = std::max(latest, now);
    const std::int64_t cost = draw_cost(limit);
    if (step(params, state, cost, now).allowed) admitted += cost;
    RC_ASSERT(admitted * params.period <=
              Int128{limit} * params.period + Int128{latest - created} * params.rate);
  }
}

// Same for the interval bucket: ticks stay ≥ P apart and after t_c + P whatever the clock does,
// so admitted ≤ C + R · floor((max_t − t_c) / P).
RC_GTEST_PROP(TokenBucketIntervalProperty, JitteryClockNeverExceedsBound, ()) {
  const TokenBucket params = draw_bucket(RefillMode::kInterval, false);
  const Micros created = kEpoch;
  IntervalBucketState state = interval_initial(params, created);
  Micros now = created;
  Micros latest = created;
  Int128 admitted = 0;
  const int steps = *gen::inRange(1, 80);
  for (int i = 0; i < steps; ++i) {
    now +=
        *gen::weightedOneOf<Micros>({{3, gen::just<Micros>(draw_gap(params.refill, params.period))},
                                     {1, gen::just<Micros>(-draw_backwards(params.period))}});
    latest = std::max(latest, now);
    const std::int64_t cost = draw_cost(params.capacity);
    if (step(params, state, cost, now).allowed) admitted += cost;
    RC_ASSERT(admitted <= Int128{params.capacity} +
                              Int128{params.refill} * ((latest - created) / params.period));
  }
}

}  // namespace
}  // namespace sluice::algorithm
