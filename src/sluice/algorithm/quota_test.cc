// Tests of the quota operations (quota.h): charge after the fact with a bounded debt, refund
// capped at the limit, per algorithm, as scenario tables at a realistic epoch probing retry_after
// ±1 µs; all or nothing over several limits; max_debt validation; and rapidcheck properties (a
// charge moves the balance by exactly its cost; a refund of what was charged restores it).
#include "sluice/algorithm/quota.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/evaluate.h"

namespace sluice::algorithm {
namespace {

using testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;  // a whole second
constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kMs = kMicrosPerMilli;

enum class Op { kCharge, kRefund, kAcquire };

struct Step {
  std::string_view description;
  Micros at;  // after kEpoch
  Op op;
  std::int64_t cost;
  bool allowed;
  std::int64_t remaining;
  std::optional<Micros> retry_after;
  Micros reset_after;
  std::optional<std::int64_t> balance;  // absent for acquire
};

// Replays `steps` on one subject's states, as a store does: an acquire charges only when
// allowed; a refused charge must leave the states unchanged.
void run(std::span<const Limit> limits, std::int64_t max_debt, std::span<const Step> steps) {
  std::vector<LimitState> states;
  for (const Limit& limit : limits) states.push_back(initial_state(limit, kEpoch));
  for (const Step& step : steps) {
    SCOPED_TRACE(std::string(step.description) + " (at +" + std::to_string(step.at) + ")");
    const Micros now = kEpoch + step.at;
    const std::vector<LimitState> before = states;
    PolicyVerdict result;
    switch (step.op) {
      case Op::kCharge:
        result = charge(limits, states, step.cost, max_debt, now);
        if (!result.verdict.allowed) {
          EXPECT_EQ(states, before) << "a refused charge changed state";
        }
        break;
      case Op::kRefund:
        result = refund(limits, states, step.cost, now);
        break;
      case Op::kAcquire:
        result = evaluate(limits, states, step.cost, now, {});
        break;
    }
    const Verdict& v = result.verdict;
    EXPECT_EQ(v.allowed, step.allowed);
    EXPECT_EQ(v.remaining, step.remaining);
    EXPECT_EQ(v.retry_after, step.retry_after);
    EXPECT_EQ(v.reset_after, step.reset_after);
    EXPECT_EQ(v.balance, step.balance);
    if (step.op != Op::kAcquire) {
      EXPECT_EQ(v.delay, std::nullopt);
    }
  }
}

// Capacity 10, 10 per second: one token per 100 ms.
TEST(QuotaTest, TokenBucketDebtMovesTheTatAndDelaysLaterRequests) {
  const Limit limits[] = {TokenBucket{.capacity = 10, .refill = 10, .period = kSecond}};
  const Step steps[] = {
      {"charge 15 from full: balance -5", 0, Op::kCharge, 15, true, 0, {}, 1500 * kMs, -5},
      {"acquire 1 must wait for 6 tokens", 0, Op::kAcquire, 1, false, 0, 600 * kMs, 1500 * kMs, {}},
      {"1 µs early", 600 * kMs - 1, Op::kAcquire, 1, false, 0, 1, 900 * kMs + 1, {}},
      {"charge 6 would reach -11 < -10: refused until 100 ms", 0, Op::kCharge, 6, false, 0,
       100 * kMs, 1500 * kMs, -5},
      {"1 µs early", 100 * kMs - 1, Op::kCharge, 6, false, 0, 1, 1400 * kMs + 1, -5},
      {"fits exactly at -10", 100 * kMs, Op::kCharge, 6, true, 0, {}, 2000 * kMs, -10},
      {"cost above capacity + max_debt: never",
       100 * kMs,
       Op::kCharge,
       21,
       false,
       0,
       {},
       2000 * kMs,
       -10},
      {"refund 3", 100 * kMs, Op::kRefund, 3, true, 0, {}, 1700 * kMs, -7},
      {"refund beyond capacity stops at full", 100 * kMs, Op::kRefund, 100, true, 10, {}, 0, 10},
      {"peek charge reports the balance", 200 * kMs, Op::kCharge, 0, true, 10, {}, 0, 10},
  };
  run(limits, 10, steps);
}

TEST(QuotaTest, GcraChargesLikeTheTokenBucketItEquals) {
  // burst 4: limit 5; 5 per second: one cell per 200 ms.
  const Limit limits[] = {Gcra{.rate = 5, .period = kSecond, .burst = 4}};
  const Step steps[] = {
      {"charge 7: balance -2", 0, Op::kCharge, 7, true, 0, {}, 1400 * kMs, -2},
      {"charge 2 would reach -4 < -3: refused until 200 ms", 0, Op::kCharge, 2, false, 0, 200 * kMs,
       1400 * kMs, -2},
      {"balance repaid by the refill", 1400 * kMs, Op::kCharge, 0, true, 5, {}, 0, 5},
  };
  run(limits, 3, steps);
}

// Capacity 10, 5 tokens at once per second.
TEST(QuotaTest, IntervalBucketDebtIsANegativeTokenCount) {
  const Limit limits[] = {TokenBucket{
      .capacity = 10, .refill = 5, .period = kSecond, .refill_mode = RefillMode::kInterval}};
  const Step steps[] = {
      {"charge 13: -3 tokens", 0, Op::kCharge, 13, true, 0, {}, 3 * kSecond, -3},
      {"acquire 1 needs 4 tokens: one refill",
       0,
       Op::kAcquire,
       1,
       false,
       0,
       kSecond,
       3 * kSecond,
       {}},
      {"charge 5 would reach -8 < -5: after one refill (2 - 5 = -3)", 0, Op::kCharge, 5, false, 0,
       kSecond, 3 * kSecond, -3},
      {"1 µs early", kSecond - 1, Op::kCharge, 5, false, 0, 1, 2 * kSecond + 1, -3},
      {"after the refill", kSecond, Op::kCharge, 5, true, 0, {}, 3 * kSecond, -3},
      {"charge above capacity + max_debt: never",
       kSecond,
       Op::kCharge,
       16,
       false,
       0,
       {},
       3 * kSecond,
       -3},
      {"refund caps at capacity", kSecond, Op::kRefund, 50, true, 10, {}, 0, 10},
  };
  run(limits, 5, steps);
}

// 10 per second (100 ms each), max_delay 200 ms: a queue of 3.
TEST(QuotaTest, LeakyBucketDebtQueuesWorkBeyondMaxDelay) {
  const Limit limits[] = {LeakyBucket{.rate = 10, .period = kSecond, .max_delay = 200 * kMs}};
  const Step steps[] = {
      {"charge 6 from idle: balance 3 - 6 = -3 < -2: never", 0, Op::kCharge, 6, false, 3, {}, 0, 3},
      {"charge 5: balance -2", 0, Op::kCharge, 5, true, 0, {}, 500 * kMs, -2},
      {"acquire starts 500 ms out: retry when 200 ms",
       0,
       Op::kAcquire,
       1,
       false,
       0,
       300 * kMs,
       500 * kMs,
       {}},
      {"charge 1 would reach -3: at 100 ms", 0, Op::kCharge, 1, false, 0, 100 * kMs, 500 * kMs, -2},
      {"1 µs early", 100 * kMs - 1, Op::kCharge, 1, false, 0, 1, 400 * kMs + 1, -2},
      {"fits", 100 * kMs, Op::kCharge, 1, true, 0, {}, 500 * kMs, -2},
      {"refund 4: 100 ms of queue left", 100 * kMs, Op::kRefund, 4, true, 2, {}, 100 * kMs, 2},
      {"refund past empty: a full queue", 100 * kMs, Op::kRefund, 4, true, 3, {}, 0, 3},
  };
  run(limits, 2, steps);
}

TEST(QuotaTest, FixedWindowCountsMoveAndTheDebtEndsWithTheWindow) {
  const Limit limits[] = {FixedWindow{.limit = 5, .window = kSecond}};
  const Step steps[] = {
      {"charge 7: count 7", 0, Op::kCharge, 7, true, 0, {}, kSecond, -2},
      {"acquire: remaining stays 0, not -2",
       10,
       Op::kAcquire,
       1,
       false,
       0,
       kSecond - 10,
       kSecond - 10,
       {}},
      {"charge 2 would reach -4 < -3: next window", 10, Op::kCharge, 2, false, 0, kSecond - 10,
       kSecond - 10, -2},
      {"charge 9 > 5 + 3: never", 10, Op::kCharge, 9, false, 0, {}, kSecond - 10, -2},
      {"refund 3: count 4", 10, Op::kRefund, 3, true, 1, {}, kSecond - 10, 1},
      {"refund past zero: count 0", 10, Op::kRefund, 30, true, 5, {}, 0, 5},
      {"next window starts clean", kSecond, Op::kCharge, 8, true, 0, {}, kSecond, -3},
  };
  run(limits, 3, steps);
}

TEST(QuotaTest, SlidingWindowRefundsTheCurrentCountFirst) {
  const Limit limits[] = {SlidingWindow{.limit = 10, .window = kSecond}};
  const Step steps[] = {
      {"charge 12 in window 0", 0, Op::kCharge, 12, true, 0, {}, 2 * kSecond, -2},
      // Window 1 at elapsed 500 ms: previous 12 weighs 6; room floor(10 - 6) = 4.
      {"charge 5 in window 1", 1500 * kMs, Op::kCharge, 5, true, 0, {}, 1500 * kMs, -1},
      // Refund 7: current 5 -> 0, previous 12 -> 10 weighs 5: balance 5.
      {"refund 7: current first, then previous",
       1500 * kMs,
       Op::kRefund,
       7,
       true,
       5,
       {},
       500 * kMs,
       5},
      // Charge 8 would make 5 - 8 = -3 < -2; refused. Room needed: previous·(W - e) <=
      // (12 - 8)·W -> 10·(W - e) <= 4·W -> e >= 600 ms: 100 ms from now.
      {"charge 8: once the previous window weighs less", 1500 * kMs, Op::kCharge, 8, false, 5,
       100 * kMs, 500 * kMs, 5},
      {"1 µs early", 1600 * kMs - 1, Op::kCharge, 8, false, 5, 1, 400 * kMs + 1, 5},
      {"fits", 1600 * kMs, Op::kCharge, 8, true, 0, {}, 1400 * kMs, -2},
  };
  run(limits, 2, steps);
}

TEST(QuotaTest, SlidingLogRefundRemovesTheNewestEntries) {
  const Limit limits[] = {SlidingLog{.limit = 5, .window = kSecond}};
  const Step steps[] = {
      {"charge 4 at 0", 0, Op::kCharge, 4, true, 1, {}, kSecond, 1},
      {"charge 3 at 100 ms: 7 in the window", 100 * kMs, Op::kCharge, 3, true, 0, {}, kSecond, -2},
      {"acquire waits until the first entry leaves",
       100 * kMs,
       Op::kAcquire,
       1,
       false,
       0,
       900 * kMs,
       kSecond,
       {}},
      {"refund 4: the 100 ms entry and one unit of the first",
       200 * kMs,
       Op::kRefund,
       4,
       true,
       2,
       {},
       800 * kMs,
       2},
      {"charge 5: 3 + 5 = 8 > 5 + 2: when the first entry leaves", 200 * kMs, Op::kCharge, 5, false,
       2, 800 * kMs, 800 * kMs, 2},
      {"1 µs early", kSecond - 1, Op::kCharge, 5, false, 2, 1, 1, 2},
      {"fits", kSecond, Op::kCharge, 5, true, 0, {}, kSecond, 0},
  };
  run(limits, 2, steps);
}

// Issue 32 M3: a reservation charged late in one window and settled in the next gave its
// estimate to the new window, on top of what that window allows. Each case: charge `reserved` at
// `charged_at` (the reserve), acquire `used` at `used_at`, settle with actual 0 at `settled_at`;
// then an acquire of `probe` at `settled_at` must be `probe_allowed`.
TEST(QuotaTest, SettleRefundsOnlyIntoTheWindowThatCountedTheReservation) {
  struct Case {
    std::string_view name;
    Limit limit;
    Micros charged_at;
    std::int64_t used;
    Micros used_at;
    Micros settled_at;
    std::int64_t probe;
    bool probe_allowed;
  };
  const Case cases[] = {
      {"fixed: reserved late in window 0, 10 used in window 1: window 1 is full",
       FixedWindow{.limit = 10, .window = kSecond}, 900 * kMs, 10, 1100 * kMs, 1200 * kMs, 1,
       false},
      {"fixed: settled in the window that counted it: the 10 come back",
       FixedWindow{.limit = 10, .window = kSecond}, 100 * kMs, 0, 100 * kMs, 500 * kMs, 10, true},
      {"fixed: ... and never more than that window's limit",
       FixedWindow{.limit = 10, .window = kSecond}, 100 * kMs, 0, 100 * kMs, 500 * kMs, 11, false},
      // Window 1 at elapsed 999 ms: previous 10 weighs 10·1 ms/1 s; current 9 fits. The settle
      // takes the 10 out of previous (where they are), not out of current: 9 + 2 > 10.
      {"sliding: reserved in window 0, 9 used at the end of window 1",
       SlidingWindow{.limit = 10, .window = kSecond}, 0, 9, 1999 * kMs, 1999 * kMs, 2, false},
      {"sliding: ... the window-1 count stands, 1 more fits",
       SlidingWindow{.limit = 10, .window = kSecond}, 0, 9, 1999 * kMs, 1999 * kMs, 1, true},
      {"sliding: settled in its own window: current is refunded",
       SlidingWindow{.limit = 10, .window = kSecond}, 100 * kMs, 0, 100 * kMs, 500 * kMs, 10, true},
      {"sliding: two windows later nothing is left to refund",
       SlidingWindow{.limit = 10, .window = kSecond}, 100 * kMs, 10, 2100 * kMs, 2200 * kMs, 1,
       false},
      {"log: the reservation's entries have left; the 10 used since stay",
       SlidingLog{.limit = 10, .window = kSecond}, 0, 10, kSecond, kSecond, 1, false},
      {"log: its entries still live: they leave, the newer ones stay",
       SlidingLog{.limit = 10, .window = kSecond}, 0, 0, 0, 600 * kMs, 10, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Limit limits[] = {c.limit};
    std::vector<LimitState> states = {initial_state(c.limit, kEpoch)};
    ASSERT_TRUE(charge(limits, states, 10, 0, kEpoch + c.charged_at).verdict.allowed);
    if (c.used > 0) {
      ASSERT_TRUE(evaluate(limits, states, c.used, kEpoch + c.used_at, {}).verdict.allowed);
    }
    const PolicyVerdict settled =
        settle_refund(limits, states, 10, kEpoch + c.charged_at, kEpoch + c.settled_at);
    EXPECT_TRUE(settled.verdict.allowed);
    EXPECT_EQ(evaluate(limits, states, c.probe, kEpoch + c.settled_at, {}).verdict.allowed,
              c.probe_allowed);
  }
}

// Buckets have no windows: a settle refunds as refund does, up to full.
TEST(QuotaTest, SettleRefundsABucketAsARefund) {
  const Limit limits[] = {TokenBucket{.capacity = 10, .refill = 10, .period = kSecond}};
  std::vector<LimitState> settled = {initial_state(limits[0], kEpoch)};
  ASSERT_TRUE(charge(limits, settled, 8, 0, kEpoch).verdict.allowed);
  std::vector<LimitState> refunded = settled;
  EXPECT_EQ(settle_refund(limits, settled, 5, kEpoch, kEpoch + 300 * kMs).verdict,
            refund(limits, refunded, 5, kEpoch + 300 * kMs).verdict);
  EXPECT_EQ(settled, refunded);
}

TEST(QuotaTest, ChargeIsAllOrNothingAcrossLimits) {
  const Limit limits[] = {FixedWindow{.limit = 100, .window = kSecond},
                          TokenBucket{.capacity = 5, .refill = 5, .period = kSecond}};
  const Step steps[] = {
      // The bucket: 5 - 8 = -3 fits max_debt 3; it has the lower balance and decides.
      {"both charged", 0, Op::kCharge, 8, true, 0, {}, 1600 * kMs, -3},
      // The window would fit; the bucket refuses: nothing is charged (run checks the states).
      {"refused by the bucket", 0, Op::kCharge, 1, false, 0, 200 * kMs, 1600 * kMs, -3},
      {"a refund returns units to both", 0, Op::kRefund, 8, true, 5, {}, 0, 5},
  };
  run(limits, 3, steps);
}

TEST(QuotaTest, ConcurrencyLimitsAreRefusedByName) {
  const Limit limits[] = {FixedWindow{.limit = 1, .window = kSecond},
                          Concurrency{.limit = 2, .lease_ttl = kSecond}};
  const Status status = check_quota_limits(limits);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("limits[1]"));
  EXPECT_THAT(status.message(), HasSubstr("concurrency"));
  EXPECT_TRUE(check_quota_limits(std::span(limits, 1)).ok());
}

TEST(QuotaTest, MaxDebtIsValidatedAgainstEveryLimit) {
  const Limit log[] = {SlidingLog{.limit = 9'000, .window = kSecond}};
  EXPECT_TRUE(validate_max_debt(1'000, log).empty());
  const std::vector<FieldError> too_deep = validate_max_debt(1'001, log);
  ASSERT_EQ(too_deep.size(), 1u);
  EXPECT_EQ(too_deep[0].field, "max_debt");
  EXPECT_THAT(too_deep[0].message, HasSubstr("limits[0]"));
  EXPECT_THAT(too_deep[0].message, HasSubstr("at most 10000"));

  const Limit bucket[] = {TokenBucket{.capacity = 1, .refill = 1, .period = 3600 * kSecond}};
  EXPECT_FALSE(validate_max_debt(1'000'000, bucket).empty()) << "a debt of 114 years";
  EXPECT_TRUE(validate_max_debt(1'000, bucket).empty());
  const Limit leaky[] = {LeakyBucket{.rate = 1, .period = 3600 * kSecond, .max_delay = 0}};
  EXPECT_FALSE(validate_max_debt(1'000'000, leaky).empty());

  EXPECT_EQ(validate_max_debt(-1, log),
            (std::vector<FieldError>{{.field = "max_debt", .message = "must not be negative"}}));
  EXPECT_FALSE(validate_max_debt(kMaxDebt + 1, {}).empty());
  EXPECT_TRUE(validate_max_debt(0, log).empty());
}

// ---- properties ----

// One limit of each chargeable kind, with small random parameters.
Limit any_limit(int kind, std::int64_t size, std::int64_t rate, Micros period) {
  switch (kind) {
    case 0:
      return TokenBucket{.capacity = size, .refill = rate, .period = period};
    case 1:
      return TokenBucket{
          .capacity = size, .refill = rate, .period = period, .refill_mode = RefillMode::kInterval};
    case 2:
      return Gcra{.rate = rate, .period = period, .burst = size - 1};
    case 3:
      return LeakyBucket{.rate = rate, .period = period, .max_delay = period};
    case 4:
      return FixedWindow{.limit = size, .window = period};
    case 5:
      return SlidingWindow{.limit = size, .window = period};
    default:
      return SlidingLog{.limit = size, .window = period};
  }
}

RC_GTEST_PROP(QuotaProperty, ChargeMovesTheBalanceByItsCostAndRefundRestoresIt, ()) {
  const int kind = *rc::gen::inRange(0, 7);
  const Limit limit =
      any_limit(kind, *rc::gen::inRange<std::int64_t>(1, 50),
                *rc::gen::inRange<std::int64_t>(1, 20), *rc::gen::inRange<Micros>(1, 5 * kSecond));
  const std::int64_t max_debt = *rc::gen::inRange<std::int64_t>(0, 50);
  std::vector<LimitState> states = {initial_state(limit, kEpoch)};
  Micros now = kEpoch;
  for (int i = 0; i < 20; ++i) {
    now += *rc::gen::inRange<Micros>(0, kSecond);
    const std::int64_t cost = *rc::gen::inRange<std::int64_t>(1, 40);
    const std::vector<LimitState> before = states;
    const std::int64_t balance_before =
        *charge({&limit, 1}, states, 0, max_debt, now).verdict.balance;
    const PolicyVerdict charged = charge({&limit, 1}, states, cost, max_debt, now);
    if (!charged.verdict.allowed) {
      RC_ASSERT(states == before);
      RC_ASSERT(balance_before - cost < -max_debt);
      continue;
    }
    RC_ASSERT(*charged.verdict.balance == balance_before - cost);
    RC_ASSERT(*charged.verdict.balance >= -max_debt);
    if (*rc::gen::arbitrary<bool>()) {
      const PolicyVerdict refunded = refund({&limit, 1}, states, cost, now);
      RC_ASSERT(*refunded.verdict.balance == balance_before);
    }
  }
}

}  // namespace
}  // namespace sluice::algorithm
