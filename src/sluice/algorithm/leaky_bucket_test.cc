// Tests of leaky_bucket (pacing with a bounded queue): scenario tables at a realistic epoch
// probing every boundary ±1 µs, and rapidcheck properties over random parameters (within
// validate.h's ranges) and random request sequences.
#include "sluice/algorithm/leaky_bucket.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <sstream>
#include <string>
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

// The smallest cost never admitted: its cost · period reaches 2^53, or its emission time
// cost · period / rate passes the 100-year horizon.
std::int64_t never_cost(const LeakyBucket& p) {
  const std::int64_t exact_limit = (kMaxExactInteger - 1) / p.period + 1;
  const auto horizon_limit = static_cast<std::int64_t>(
      std::min<Int128>(Int128{kMaxHorizon} * p.rate / p.period + 1, exact_limit));
  return std::min(exact_limit, horizon_limit);
}

std::string describe(const Verdict& v) {
  std::ostringstream out;
  out << "{allowed=" << v.allowed << " limit=" << v.limit << " remaining=" << v.remaining
      << " retry_after=" << (v.retry_after ? std::to_string(*v.retry_after) : "none")
      << " reset_after=" << v.reset_after
      << " delay=" << (v.delay ? std::to_string(*v.delay) : "none") << "}";
  return out.str();
}

// One request as a store would run it: decide, and charge only an allowed request with cost > 0.
Verdict step(const LeakyBucket& params, TatState& state, std::int64_t cost, Micros now) {
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
  std::optional<Micros> delay;
};

void run_table(const LeakyBucket& params, std::span<const Row> rows) {
  TatState state = initial_state(params, kEpoch);
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.description) + " (at +" + std::to_string(row.at) + " µs, cost " +
                 std::to_string(row.cost) + ")");
    const TatState before = state;
    const Verdict verdict = step(params, state, row.cost, kEpoch + row.at);
    EXPECT_EQ(verdict.allowed, row.allowed);
    EXPECT_EQ(verdict.limit, queue_capacity(params));
    EXPECT_EQ(verdict.remaining, row.remaining);
    EXPECT_EQ(verdict.retry_after, row.retry_after);
    EXPECT_EQ(verdict.reset_after, row.reset_after);
    EXPECT_EQ(verdict.delay, row.delay);
    if (!row.allowed || row.cost == 0) {
      EXPECT_TRUE(before == state) << "a denied request or a peek changed the state";
    }
  }
}

constexpr auto kNone = std::nullopt;

TEST(LeakyBucketTest, QueueCapacityIsUnitRequestsAnIdleQueueAdmitsAtOnce) {
  EXPECT_EQ(queue_capacity({.rate = 3, .period = kMicrosPerSecond, .max_delay = 500'000}), 2);
  EXPECT_EQ(queue_capacity({.rate = 3, .period = kMicrosPerSecond, .max_delay = 666'666}), 2);
  EXPECT_EQ(queue_capacity({.rate = 3, .period = kMicrosPerSecond, .max_delay = 666'667}), 3);
  EXPECT_EQ(queue_capacity({.rate = 1, .period = kMicrosPerSecond, .max_delay = 0}), 1);
  EXPECT_EQ(queue_capacity({.rate = 10, .period = kMicrosPerSecond, .max_delay = 1'000'000}), 11);
}

// 3 per second (emission interval 333 333.33 µs), requests may wait up to 500 ms.
TEST(LeakyBucketTest, AdmitsExactlyWhileScheduledStartIsWithinMaxDelay) {
  const LeakyBucket params{.rate = 3, .period = kMicrosPerSecond, .max_delay = 500'000};
  const std::int64_t never = never_cost(params);  // 9'007'199'255
  const Row rows[] = {
      // description, at, cost, allowed, remaining, retry_after, reset_after, delay
      {"idle queue: starts now", 0, 1, true, 1, kNone, 333'334, 0},
      {"queued one interval (333333.33 µs, waits 333334)", 0, 1, true, 0, kNone, 666'667, 333'334},
      {"third would start at 666666.67 > now + 500000", 0, 1, false, 0, 166'667, 666'667, kNone},
      {"1 µs before the start fits max_delay", 166'666, 1, false, 0, 1, 500'001, kNone},
      {"start exactly 499999.67 µs away: admitted", 166'667, 1, true, 0, kNone, 833'333, 500'000},
      {"queue idle at its TAT: a large cost is paced, not refused", 1'000'000, 5, true, 0, kNone,
       1'666'667, 0},
      {"peek behind a long queue says when a request fits", 1'000'000, 0, false, 0, 1'166'667,
       1'666'667, kNone},
      {"peek 1 µs early", 2'166'666, 0, false, 0, 1, 500'001, kNone},
      {"peek when it fits: one unit slot left", 2'166'667, 0, true, 1, kNone, 500'000, 500'000},
      {"cost with emission time ≥ 2^53 µs: never", 10'000'000, never, false, 2, kNone, 0, kNone},
      {"the largest cost that is not never", 10'000'000, never - 1, true, 0, kNone,
       3'002'399'751'333'334, 0},
  };
  run_table(params, rows);
}

TEST(LeakyBucketTest, ZeroMaxDelayPacesOneRequestPerInterval) {
  const LeakyBucket params{.rate = 1'000, .period = kMicrosPerSecond, .max_delay = 0};
  const Row rows[] = {
      {"first", 0, 1, true, 0, kNone, 1'000, 0},
      {"1 µs before the next emission", 999, 1, false, 0, 1, 1, kNone},
      {"at the next emission", 1'000, 1, true, 0, kNone, 1'000, 0},
      {"peek while busy is denied with retry_after", 1'000, 0, false, 0, 1'000, 1'000, kNone},
      {"cost 3 takes three intervals", 2'000, 3, true, 0, kNone, 3'000, 0},
      {"next only after all three", 4'999, 1, false, 0, 1, 1, kNone},
      {"after all three", 5'000, 1, true, 0, kNone, 1'000, 0},
  };
  run_table(params, rows);
}

// 7 per second with max_delay of exactly two intervals rounded down: the third queued request's
// start (2 · 142857.14 = 285714.29 µs) is just beyond 285714 µs.
TEST(LeakyBucketTest, FractionalStartJustBeyondMaxDelayIsDenied) {
  const LeakyBucket params{.rate = 7, .period = kMicrosPerSecond, .max_delay = 285'714};
  const Row rows[] = {
      {"first", 0, 1, true, 1, kNone, 142'858, 0},
      {"second waits 142857.14", 0, 1, true, 0, kNone, 285'715, 142'858},
      {"third at 285714.29 > 285714", 0, 1, false, 0, 1, 285'715, kNone},
      {"1 µs later it fits", 1, 1, true, 0, kNone, 428'571, 285'714},
  };
  run_table(params, rows);
}

// Greedy clients: retry exactly at retry_after and fill the queue each time. The n-th unit
// request starts at t_0 + (n−1)·P/R and is admitted once that is ≤ now + D, so after filling at
// `now` exactly floor((now − t_0 + D)·R/P) + 1 are admitted. With D ≥ 1 the queue never runs
// dry (the client returns before the TAT), so fractional intervals never drift. With D = 0 and
// a fractional interval the queue is idle when the client returns at ceil(TAT) and restarts
// there (s = max(TAT, now) by definition), so only whole-µs intervals are exact for D = 0.
TEST(LeakyBucketTest, GreedyClientGetsExactlyConfiguredRateWithoutDrift) {
  struct Case {
    const char* name;
    LeakyBucket params;
    Micros horizon;
  };
  const Case cases[] = {
      {"3 per second, 500 ms queue", {3, kMicrosPerSecond, 500'000}, 3'000 * kMicrosPerSecond},
      {"7 per second, 1 µs queue", {7, kMicrosPerSecond, 1}, 3'000 * kMicrosPerSecond},
      {"1 per day, 1 h queue", {1, kMicrosPerDay, kMicrosPerHour}, 1'000 * kMicrosPerDay},
      {"3 per day, 1 day queue", {3, kMicrosPerDay, kMicrosPerDay}, 1'000 * kMicrosPerDay},
      {"999983 per second, 1 µs queue", {999'983, kMicrosPerSecond, 1}, 20'000},
      {"1000000 per second, no queue", {1'000'000, kMicrosPerSecond, 0}, 20'000},
      {"1000 per second, no queue", {1'000, kMicrosPerSecond, 0}, 20 * kMicrosPerSecond},
      {"5 per 3 µs, 10 µs queue", {5, 3, 10}, 20'000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const LeakyBucket& p = c.params;
    ASSERT_TRUE(validate_limit(p, "").empty());
    TatState state = initial_state(p, kEpoch);
    Micros now = kEpoch;
    std::int64_t admitted = 0;
    std::int64_t fills = 0;
    while (now <= kEpoch + c.horizon) {
      const std::int64_t expected =
          saturate(floor_div(Int128{now - kEpoch + p.max_delay} * p.rate, Int128{p.period})) + 1;
      const Verdict verdict = step(p, state, 1, now);
      if (verdict.allowed) {
        // This is request number `admitted` (from 0), scheduled at t_0 + admitted·P/R.
        ASSERT_EQ(verdict.delay, kEpoch + ceil_div(admitted * p.period, p.rate) - now);
        ASSERT_LE(++admitted, expected);
        continue;
      }
      ++fills;
      ASSERT_EQ(admitted, expected) << "after filling the queue at +" << (now - kEpoch) << " µs";
      ASSERT_TRUE(verdict.retry_after.has_value());
      ASSERT_GE(*verdict.retry_after, 1);
      now += *verdict.retry_after;
    }
    EXPECT_GT(fills, 100);
  }
}

// ---------------------------------------------------------------------------------------------
// Property tests. Generators stay inside what validate_limit accepts.

namespace gen = rc::gen;

LeakyBucket draw_params() {
  LeakyBucket params{.rate = *gen::weightedOneOf<std::int64_t>(
                         {{2, gen::inRange<std::int64_t>(1, 11)},
                          {1, gen::element<std::int64_t>(3, 7, 999'983, 1'000'000)},
                          {1, gen::inRange<std::int64_t>(1, 1'000'001)}}),
                     .period = *gen::weightedOneOf<Micros>(
                         {{2, gen::element<Micros>(1, 7, 1'000, kMicrosPerSecond, kMicrosPerMinute,
                                                   kMicrosPerDay)},
                          {2, gen::inRange<Micros>(1, 1'000)},
                          {2, gen::inRange<Micros>(1, 100 * kMicrosPerSecond)}})};
  const Micros interval = std::max<Micros>(1, params.period / params.rate);
  params.max_delay =
      *gen::weightedOneOf<Micros>({{2, gen::just<Micros>(0)},
                                   {2, gen::inRange<Micros>(0, 4)},
                                   {3, gen::inRange<Micros>(0, 5 * interval + 2)},
                                   {1, gen::element<Micros>(interval - 1, interval, interval + 1)},
                                   {1, gen::inRange<Micros>(0, 3 * params.period + 1)}});
  RC_PRE(validate_limit(params, "").empty());
  return params;
}

// Costs: peeks, unit requests, a few units, and the never threshold ± 1.
std::int64_t draw_cost(const LeakyBucket& params) {
  const std::int64_t never = never_cost(params);
  return *gen::weightedOneOf<std::int64_t>(
      {{1, gen::just<std::int64_t>(0)},
       {5, gen::just<std::int64_t>(1)},
       {3, gen::inRange<std::int64_t>(0, 11)},
       {1, gen::inRange<std::int64_t>(0, std::min<std::int64_t>(never, 1'000))},
       {1, gen::element<std::int64_t>(never - 1, never, never + 1)}});
}

Micros draw_gap(const LeakyBucket& p) {
  const Micros interval = std::max<Micros>(1, p.period / p.rate);
  return *gen::weightedOneOf<Micros>(
      {{3, gen::just<Micros>(0)},
       {2, gen::inRange<Micros>(1, 4)},
       {3, gen::inRange<Micros>(0, 2 * interval + 2)},
       {2, gen::element<Micros>(interval - 1, interval, interval + 1, p.max_delay, p.max_delay + 1,
                                p.period)},
       {1, gen::inRange<Micros>(0, 3 * p.period + 2)}});
}

Micros draw_backwards(Micros period) {
  return *gen::weightedOneOf<Micros>({{2, gen::inRange<Micros>(1, 4)},
                                      {2, gen::inRange<Micros>(1, period + 2)},
                                      {1, gen::inRange<Micros>(1, 30 * kMicrosPerDay)}});
}

struct Event {
  Micros at = 0;
  std::int64_t cost = 0;
  Verdict verdict;
  TatState before;
  TatState after;
};

// A random request sequence with non-decreasing times; sometimes the client comes back exactly
// at (or 1 µs around) the last retry_after. The state is created at the first request.
std::vector<Event> drive(const LeakyBucket& params) {
  const int steps = *gen::inRange(1, 80);
  Micros now = kEpoch + *gen::inRange<Micros>(0, kMicrosPerDay);
  TatState state = initial_state(params, now);
  std::vector<Event> events;
  std::optional<Micros> last_retry;
  for (int i = 0; i < steps; ++i) {
    if (i > 0) {
      if (last_retry && *gen::inRange(0, 3) == 0) {
        now += *last_retry + *gen::inRange<Micros>(-1, 2);
      } else {
        now += draw_gap(params);
      }
    }
    Event event{.at = now, .cost = draw_cost(params), .before = state};
    event.verdict = step(params, state, event.cost, now);
    event.after = state;
    last_retry = event.verdict.retry_after;
    events.push_back(event);
  }
  return events;
}

void check_verdict_shape(const LeakyBucket& params, std::int64_t cost, const Verdict& v) {
  RC_ASSERT(v.limit == queue_capacity(params));
  RC_ASSERT(v.remaining >= 0);
  RC_ASSERT(v.remaining <= v.limit);
  RC_ASSERT(v.reset_after >= 0);
  if (v.allowed) {
    RC_ASSERT(!v.retry_after.has_value());
    RC_ASSERT(v.delay.has_value());
    RC_ASSERT(*v.delay >= 0);
    RC_ASSERT(*v.delay <= params.max_delay);
    RC_ASSERT(*v.delay <= v.reset_after);
  } else {
    RC_ASSERT(!v.delay.has_value());
    RC_ASSERT(v.retry_after.has_value() == (cost < never_cost(params)));
  }
  if (v.retry_after) RC_ASSERT(*v.retry_after >= 1);
}

// a. Each admitted request i (time t_i, cost c_i) is scheduled at s_i = max(TAT, t_i) with
// s_i − t_i ≤ D (exactly, before rounding), and the TAT then becomes s_i + c_i·P/R, so
// s_{i+1} ≥ s_i + c_i·P/R. For admitted requests a < k in [t_a, t_k]: s_a ≥ t_a and
// s_k ≤ t_k + D, hence
//   (c_a + … + c_{k−1}) · P ≤ (s_k − s_a) · R ≤ (t_k − t_a + D) · R,
// i.e. the cost admitted in [t_a, t_k] is at most floor((t_k − t_a + D)·R/P) + c_k.
RC_GTEST_PROP(LeakyBucketProperty, NeverAdmitsMoreThanPacingWithinMaxDelayAllows, ()) {
  const LeakyBucket p = draw_params();
  std::vector<std::pair<Micros, std::int64_t>> admitted;
  for (const Event& e : drive(p)) {
    check_verdict_shape(p, e.cost, e.verdict);
    if (e.verdict.allowed && e.cost > 0) admitted.emplace_back(e.at, e.cost);
  }
  for (std::size_t k = 0; k < admitted.size(); ++k) {
    Int128 before_k = 0;  // c_a + … + c_{k−1}
    for (std::size_t a = k; a-- > 0;) {
      before_k += admitted[a].second;
      RC_ASSERT(before_k * p.period <=
                Int128{admitted[k].first - admitted[a].first + p.max_delay} * p.rate);
    }
  }
}

// b. retry_after exact: on the unchanged state the same request is admitted at now + r and not at
// now + r − 1.
RC_GTEST_PROP(LeakyBucketProperty, RetryAfterIsExact, ()) {
  const LeakyBucket p = draw_params();
  for (const Event& e : drive(p)) {
    check_verdict_shape(p, e.cost, e.verdict);
    if (!e.verdict.retry_after) continue;
    const Micros r = *e.verdict.retry_after;
    RC_ASSERT(decide(p, e.before, e.cost, e.at + r).allowed);
    RC_ASSERT(!decide(p, e.before, e.cost, e.at + r - 1).allowed);
  }
}

// c. Denials and peeks leave the state equal, and replaying only the charged requests gives the
// same verdicts and the same final state.
RC_GTEST_PROP(LeakyBucketProperty, DenialsAndPeeksLeaveStateUnchanged, ()) {
  const LeakyBucket p = draw_params();
  const std::vector<Event> events = drive(p);
  for (const Event& e : events) {
    if (!e.verdict.allowed || e.cost == 0) RC_ASSERT(e.before == e.after);
  }
  TatState replay = initial_state(p, events.front().at);
  for (const Event& e : events) {
    if (!e.verdict.allowed || e.cost == 0) continue;
    const Verdict again = step(p, replay, e.cost, e.at);
    if (again != e.verdict) RC_FAIL(describe(again) + " != " + describe(e.verdict));
  }
  RC_ASSERT(replay == events.back().after);
}

// d. A clock reading earlier than the last commit never finds more room in the queue.
RC_GTEST_PROP(LeakyBucketProperty, EarlierClockNeverCreatesCapacity, ()) {
  const LeakyBucket p = draw_params();
  for (const Event& e : drive(p)) {
    if (!e.verdict.allowed || e.cost == 0) continue;
    const Micros earlier = e.at - draw_backwards(p.period);
    RC_ASSERT(decide(p, e.after, 0, earlier).remaining <= decide(p, e.after, 0, e.at).remaining);
    const std::int64_t cost = draw_cost(p);
    if (decide(p, e.after, cost, earlier).allowed)
      RC_ASSERT(decide(p, e.after, cost, e.at).allowed);
  }
}

// `remaining` is exact: right after a request, exactly `remaining` more unit requests at the same
// instant are admitted, and the next one is not (checked when remaining is small enough to
// enumerate).
RC_GTEST_PROP(LeakyBucketProperty, RemainingIsExactlyWhatIsStillGrantableNow, ()) {
  const LeakyBucket p = draw_params();
  for (const Event& e : drive(p)) {
    if (e.verdict.remaining > 200) continue;
    TatState state = e.after;
    for (std::int64_t i = 0; i < e.verdict.remaining; ++i)
      RC_ASSERT(step(p, state, 1, e.at).allowed);
    RC_ASSERT(!decide(p, state, 1, e.at).allowed);
  }
}

// reset_after counts down to the instant the queue is empty again, which is also when the stored
// state expires: a peek then finds the whole queue free and nothing to wait for.
RC_GTEST_PROP(LeakyBucketProperty, ResetAfterIsWhenQueueIsEmptyAgain, ()) {
  const LeakyBucket p = draw_params();
  for (const Event& e : drive(p)) {
    const Micros r = e.verdict.reset_after;
    RC_ASSERT(r == std::max<Micros>(0, expires_at(p, e.after) - e.at));
    const Verdict then = decide(p, e.after, 0, e.at + r);
    RC_ASSERT(then.remaining == queue_capacity(p));
    RC_ASSERT(then.delay == std::optional<Micros>(0));
    if (r > 0) RC_ASSERT(decide(p, e.after, 0, e.at + r - 1).reset_after == 1);
  }
}

// g. From expires_at on, the stored state decides exactly like a fresh one.
RC_GTEST_PROP(LeakyBucketProperty, ExpiredStateDecidesLikeInitialState, ()) {
  const LeakyBucket p = draw_params();
  for (const Event& e : drive(p)) {
    const Micros expiry = expires_at(p, e.after);
    const Micros later =
        expiry + *gen::weightedOneOf<Micros>({{2, gen::just<Micros>(0)},
                                              {1, gen::inRange<Micros>(1, 3)},
                                              {1, gen::inRange<Micros>(0, 3 * p.period + 1)}});
    const std::int64_t cost = draw_cost(p);
    for (const Micros t : {expiry, later}) {
      const Verdict stored = decide(p, e.after, cost, t);
      const Verdict fresh = decide(p, initial_state(p, t), cost, t);
      if (stored != fresh) {
        RC_FAIL("at expires_at + " + std::to_string(t - expiry) + ": " + describe(stored) +
                " != " + describe(fresh));
      }
    }
  }
}

// A clock that jitters backwards as well as forwards still cannot overfill the queue: the TAT
// only moves forward by c_i·P/R per admission and every start satisfies min_t ≤ s_i ≤ max_t + D,
// so all admitted cost but the last satisfies  Σ c_i · P ≤ (max_t − min_t + D) · R.
RC_GTEST_PROP(LeakyBucketProperty, JitteryClockNeverExceedsBound, ()) {
  const LeakyBucket p = draw_params();
  TatState state = initial_state(p, kEpoch);
  Micros now = kEpoch;
  Micros earliest = now;
  Micros latest = now;
  Int128 admitted_before_last = 0;
  const int steps = *gen::inRange(1, 80);
  for (int i = 0; i < steps; ++i) {
    now += *gen::weightedOneOf<Micros>(
        {{3, gen::just<Micros>(draw_gap(p))}, {1, gen::just<Micros>(-draw_backwards(p.period))}});
    earliest = std::min(earliest, now);
    latest = std::max(latest, now);
    const std::int64_t cost = draw_cost(p);
    if (step(p, state, cost, now).allowed) {
      RC_ASSERT(admitted_before_last * p.period <=
                Int128{latest - earliest + p.max_delay} * p.rate);
      admitted_before_last += cost;
    }
  }
}

}  // namespace
}  // namespace sluice::algorithm
