// Tests of evaluate.h (DESIGN.md §2): a policy's limits decided all or nothing, the tightest
// limit reported with its index, leaky delays combined, exact policy retry_after, lease release
// and renewal across concurrency limits, and the per-Limit dispatch of initial_state,
// state_fits and expires_at. Ends with rapidcheck properties over random multi-limit policies.
#include "sluice/algorithm/evaluate.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "sluice/algorithm/concurrency.h"
#include "sluice/algorithm/leaky_bucket.h"
#include "sluice/algorithm/token_bucket.h"
#include "sluice/algorithm/validate.h"
#include "sluice/algorithm/window.h"

namespace sluice::algorithm {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;  // a whole second, 20 s into its minute
constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kMs = kMicrosPerMilli;

// A policy's limits and one subject's states, as a store holds them.
struct Policy {
  std::vector<Limit> limits;
  std::vector<LimitState> states;

  explicit Policy(std::vector<Limit> l, Micros now = kEpoch) : limits(std::move(l)) {
    for (const Limit& limit : limits) states.push_back(initial_state(limit, now));
  }

  PolicyVerdict acquire(std::int64_t cost, Micros now, std::string_view lease = "lease") {
    return evaluate(limits, states, cost, now, lease);
  }
  // Decides without charging anything.
  PolicyVerdict peek_cost(std::int64_t cost, Micros now) const {
    std::vector<LimitState> copy = states;
    return evaluate(limits, copy, cost, now, "peek");
  }
};

const ConcurrencyState& leases_of(const Policy& policy, std::size_t index) {
  return std::get<ConcurrencyState>(policy.states[index]);
}

TEST(EvaluateTest, ALimitThatDeniesChargesNoneOfTheOthers) {
  // 10/s token bucket + 1000/h fixed window + 5 concurrent.
  Policy policy({TokenBucket{.capacity = 10, .refill = 10, .period = kSecond},
                 FixedWindow{.limit = 1000, .window = kMicrosPerHour},
                 Concurrency{.limit = 5, .lease_ttl = 30 * kSecond}});
  for (int i = 0; i < 5; ++i) {
    const PolicyVerdict verdict = policy.acquire(1, kEpoch, "lease-" + std::to_string(i));
    ASSERT_TRUE(verdict.verdict.allowed);
    EXPECT_EQ(verdict.limit_index, 2u);  // concurrency has the fewest units left
    EXPECT_EQ(verdict.verdict.remaining, 4 - i);
  }
  const std::vector<LimitState> before = policy.states;
  const PolicyVerdict denied = policy.acquire(1, kEpoch + 1, "lease-5");
  EXPECT_FALSE(denied.verdict.allowed);
  EXPECT_EQ(denied.limit_index, 2u);
  EXPECT_EQ(denied.verdict.retry_after, 30 * kSecond - 1);
  EXPECT_EQ(policy.states, before);  // neither the bucket nor the window was charged
  // The bucket and the window still hold exactly the 5 admitted requests.
  const TokenBucket& bucket = std::get<TokenBucket>(policy.limits[0]);
  EXPECT_EQ(decide(bucket, std::get<TatState>(policy.states[0]), 0, kEpoch + 1).remaining, 5);
  EXPECT_EQ(std::get<WindowState>(policy.states[1]).count, 5);
  EXPECT_TRUE(release_lease(policy.limits, policy.states, "lease-0", kEpoch + 2));
  EXPECT_TRUE(policy.acquire(1, kEpoch + 2, "lease-5").verdict.allowed);
}

TEST(EvaluateTest, AnAllowedRequestChargesEveryLimitAndRecordsItsLease) {
  Policy policy({FixedWindow{.limit = 10, .window = kSecond},
                 SlidingLog{.limit = 10, .window = kSecond},
                 Concurrency{.limit = 10, .lease_ttl = kSecond}});
  ASSERT_TRUE(policy.acquire(3, kEpoch + 7, "abc").verdict.allowed);
  EXPECT_EQ(std::get<WindowState>(policy.states[0]).count, 3);
  EXPECT_EQ(std::get<SlidingLogState>(policy.states[1]).entries,
            (std::vector<LogEntry>{{.at = kEpoch + 7, .cost = 3}}));
  EXPECT_EQ(leases_of(policy, 2).leases,
            (std::vector<Lease>{{.id = "abc", .expires_at = kEpoch + kSecond + 7, .cost = 3}}));
}

TEST(EvaluateTest, APeekChargesNothingAndReportsTheTightestRemaining) {
  Policy policy(
      {FixedWindow{.limit = 10, .window = kSecond}, Concurrency{.limit = 4, .lease_ttl = kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch, "a").verdict.allowed);
  const std::vector<LimitState> before = policy.states;
  const PolicyVerdict peek = policy.acquire(0, kEpoch + 1, "b");
  EXPECT_TRUE(peek.verdict.allowed);
  EXPECT_EQ(peek.limit_index, 1u);
  EXPECT_EQ(peek.verdict.remaining, 3);
  EXPECT_EQ(policy.states, before);
}

TEST(EvaluateTest, ReportsTheLimitWithTheLowestRemainingWhenAllowed) {
  Policy policy({FixedWindow{.limit = 10, .window = kSecond},
                 FixedWindow{.limit = 3, .window = kSecond},
                 SlidingLog{.limit = 5, .window = kSecond}});
  const PolicyVerdict verdict = policy.acquire(1, kEpoch);
  EXPECT_TRUE(verdict.verdict.allowed);
  EXPECT_EQ(verdict.limit_index, 1u);
  EXPECT_EQ(verdict.verdict.remaining, 2);
  EXPECT_EQ(verdict.verdict.limit, 3);
  EXPECT_EQ(verdict.verdict.reset_after, kSecond);
}

TEST(EvaluateTest, TiesGoToTheFirstLimit) {
  Policy policy(
      {SlidingLog{.limit = 3, .window = 2 * kSecond}, FixedWindow{.limit = 3, .window = kSecond}});
  const PolicyVerdict allowed = policy.acquire(3, kEpoch);
  EXPECT_EQ(allowed.limit_index, 0u);
  EXPECT_EQ(allowed.verdict.reset_after, 2 * kSecond);
  const PolicyVerdict never = policy.acquire(4, kEpoch);
  EXPECT_FALSE(never.verdict.allowed);
  EXPECT_EQ(never.limit_index, 0u);
}

TEST(EvaluateTest, ReportsTheLongestRetryAfterWhenDenied) {
  // 2 tokens refilled 1/s, and 2 per minute (kEpoch is 20 s into its minute).
  Policy policy({TokenBucket{.capacity = 2, .refill = 1, .period = kSecond},
                 FixedWindow{.limit = 2, .window = kMicrosPerMinute}});
  ASSERT_TRUE(policy.acquire(2, kEpoch).verdict.allowed);
  const PolicyVerdict denied = policy.acquire(1, kEpoch + 1);
  EXPECT_FALSE(denied.verdict.allowed);
  EXPECT_EQ(denied.limit_index, 1u);
  EXPECT_EQ(denied.verdict.retry_after, 40 * kSecond - 1);
  EXPECT_EQ(denied.verdict.remaining, 0);
  // The bucket alone would allow it after 1 s; the policy only when both do.
  EXPECT_FALSE(policy.peek_cost(1, kEpoch + kSecond).verdict.allowed);
  EXPECT_FALSE(policy.peek_cost(1, kEpoch + 40 * kSecond - 1).verdict.allowed);
  EXPECT_TRUE(policy.peek_cost(1, kEpoch + 40 * kSecond).verdict.allowed);
}

TEST(EvaluateTest, ADenyingLimitDecidesOverAllowingOnes) {
  Policy policy(
      {FixedWindow{.limit = 100, .window = kSecond}, SlidingLog{.limit = 1, .window = kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch).verdict.allowed);
  const PolicyVerdict denied = policy.acquire(1, kEpoch + 10);
  EXPECT_FALSE(denied.verdict.allowed);
  EXPECT_EQ(denied.limit_index, 1u);
  EXPECT_EQ(denied.verdict.retry_after, kSecond - 10);
}

TEST(EvaluateTest, ALimitThatCanNeverGrantTheCostWinsOverAnyRetryAfter) {
  Policy policy({FixedWindow{.limit = 5, .window = kMicrosPerMinute},
                 TokenBucket{.capacity = 2, .refill = 1, .period = kSecond},
                 SlidingLog{.limit = 5, .window = kMicrosPerHour}});
  ASSERT_TRUE(policy.acquire(2, kEpoch).verdict.allowed);
  const std::vector<LimitState> before = policy.states;
  // Cost 4: the window waits 40 s, the log an hour, the 2-token bucket can never grant it.
  const PolicyVerdict never = policy.acquire(4, kEpoch + 1);
  EXPECT_FALSE(never.verdict.allowed);
  EXPECT_EQ(never.limit_index, 1u);
  EXPECT_EQ(never.verdict.retry_after, std::nullopt);
  EXPECT_EQ(never.verdict.limit, 2);
  EXPECT_EQ(policy.states, before);
}

TEST(EvaluateTest, DelayIsTheLongestLeakyDelayWhateverLimitDecides) {
  Policy policy({LeakyBucket{.rate = 1, .period = 100 * kMs, .max_delay = kSecond},
                 LeakyBucket{.rate = 1, .period = 300 * kMs, .max_delay = kSecond},
                 FixedWindow{.limit = 3, .window = kSecond}});
  const PolicyVerdict first = policy.acquire(1, kEpoch);
  EXPECT_EQ(first.verdict.delay, 0);
  const PolicyVerdict second = policy.acquire(1, kEpoch);
  EXPECT_EQ(second.limit_index, 2u);  // the window has 1 left
  EXPECT_EQ(second.verdict.remaining, 1);
  EXPECT_EQ(second.verdict.delay, 300 * kMs);
  const PolicyVerdict third = policy.acquire(1, kEpoch + 100 * kMs);
  EXPECT_EQ(third.limit_index, 2u);
  EXPECT_EQ(third.verdict.delay, 500 * kMs);  // max(200 − 100, 600 − 100) ms
  const std::vector<LimitState> before = policy.states;
  const PolicyVerdict denied = policy.acquire(1, kEpoch + 100 * kMs);
  EXPECT_FALSE(denied.verdict.allowed);
  EXPECT_EQ(denied.limit_index, 2u);
  EXPECT_EQ(denied.verdict.delay, std::nullopt);  // a denied caller has nothing to wait for
  EXPECT_EQ(policy.states, before);               // the queues did not advance
}

TEST(EvaluateTest, NoDelayWithoutALeakyBucket) {
  Policy policy({FixedWindow{.limit = 3, .window = kSecond},
                 TokenBucket{.capacity = 3, .refill = 1, .period = kSecond}});
  EXPECT_EQ(policy.acquire(1, kEpoch).verdict.delay, std::nullopt);
}

TEST(EvaluateTest, ReleaseLeaseFreesItInEveryConcurrencyLimitAndRefundsNothingElse) {
  Policy policy({Concurrency{.limit = 2, .lease_ttl = kSecond},
                 FixedWindow{.limit = 10, .window = kSecond},
                 Concurrency{.limit = 5, .lease_ttl = 2 * kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch, "a").verdict.allowed);
  ASSERT_TRUE(policy.acquire(1, kEpoch, "b").verdict.allowed);
  EXPECT_TRUE(release_lease(policy.limits, policy.states, "a", kEpoch + 1));
  EXPECT_EQ(leases_of(policy, 0).leases.size(), 1u);
  EXPECT_EQ(leases_of(policy, 2).leases.size(), 1u);
  EXPECT_EQ(std::get<WindowState>(policy.states[1]).count, 2);  // a window is not refunded
  EXPECT_FALSE(release_lease(policy.limits, policy.states, "a", kEpoch + 1));  // idempotent
  EXPECT_FALSE(release_lease(policy.limits, policy.states, "unknown", kEpoch + 1));
}

TEST(EvaluateTest, ReleaseLeaseIsTrueWhileAnyConcurrencyLimitStillHasItLive) {
  Policy policy({Concurrency{.limit = 2, .lease_ttl = kSecond},
                 Concurrency{.limit = 2, .lease_ttl = 2 * kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch, "a").verdict.allowed);
  // Dead in the first limit (1 s lease), alive in the second (2 s lease).
  EXPECT_TRUE(release_lease(policy.limits, policy.states, "a", kEpoch + kSecond));
  EXPECT_TRUE(leases_of(policy, 0).leases.empty());
  EXPECT_TRUE(leases_of(policy, 1).leases.empty());
  ASSERT_TRUE(policy.acquire(1, kEpoch + kSecond, "b").verdict.allowed);
  EXPECT_FALSE(release_lease(policy.limits, policy.states, "b", kEpoch + 3 * kSecond));
}

TEST(EvaluateTest, RenewLeaseExtendsItInEveryConcurrencyLimitByItsOwnTtl) {
  Policy policy({Concurrency{.limit = 2, .lease_ttl = kSecond},
                 TokenBucket{.capacity = 5, .refill = 1, .period = kSecond},
                 Concurrency{.limit = 2, .lease_ttl = 3 * kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch, "a").verdict.allowed);
  EXPECT_TRUE(renew_lease(policy.limits, policy.states, "a", kEpoch + kSecond - 1));
  EXPECT_EQ(leases_of(policy, 0).leases.front().expires_at, kEpoch + 2 * kSecond - 1);
  EXPECT_EQ(leases_of(policy, 2).leases.front().expires_at, kEpoch + 4 * kSecond - 1);
  EXPECT_FALSE(renew_lease(policy.limits, policy.states, "unknown", kEpoch + kSecond));
  // Dead in the first limit from 2 s − 1 µs on, still alive in the second.
  EXPECT_TRUE(renew_lease(policy.limits, policy.states, "a", kEpoch + 2 * kSecond));
  EXPECT_EQ(leases_of(policy, 0).leases.front().expires_at, kEpoch + 2 * kSecond - 1);
  EXPECT_EQ(leases_of(policy, 2).leases.front().expires_at, kEpoch + 5 * kSecond);
  EXPECT_FALSE(renew_lease(policy.limits, policy.states, "a", kEpoch + 5 * kSecond));
}

TEST(EvaluateTest, LeaseOperationsOnAPolicyWithoutConcurrencyDoNothing) {
  Policy policy({FixedWindow{.limit = 2, .window = kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch, "a").verdict.allowed);
  const std::vector<LimitState> before = policy.states;
  EXPECT_FALSE(release_lease(policy.limits, policy.states, "a", kEpoch));
  EXPECT_FALSE(renew_lease(policy.limits, policy.states, "a", kEpoch));
  EXPECT_EQ(policy.states, before);
}

TEST(EvaluateTest, UsesLeasesOnlyWithAConcurrencyLimit) {
  const std::vector<Limit> without = {FixedWindow{.limit = 1, .window = 1},
                                      Gcra{.rate = 1, .period = 1, .burst = 0}};
  std::vector<Limit> with = without;
  with.push_back(Concurrency{.limit = 1, .lease_ttl = 1});
  EXPECT_FALSE(uses_leases(without));
  EXPECT_TRUE(uses_leases(with));
}

TEST(EvaluateTest, InitialStateDispatchesOnTheAlgorithm) {
  const Micros now = kEpoch + 1'234'567;
  EXPECT_EQ(initial_state(Limit{TokenBucket{.capacity = 5, .refill = 1, .period = kSecond}}, now),
            LimitState{TatState{.tat = now}});  // full
  EXPECT_EQ(initial_state(Limit{TokenBucket{.capacity = 5,
                                            .refill = 2,
                                            .period = kSecond,
                                            .refill_mode = RefillMode::kInterval,
                                            .initial = 1}},
                          now),
            (LimitState{IntervalBucketState{.tokens = 1, .refilled_at = now}}));
  EXPECT_EQ(initial_state(Limit{Gcra{.rate = 1, .period = kSecond, .burst = 3}}, now),
            LimitState{TatState{.tat = now}});
  EXPECT_EQ(initial_state(Limit{LeakyBucket{.rate = 1, .period = kSecond, .max_delay = 0}}, now),
            LimitState{TatState{.tat = now}});
  EXPECT_EQ(initial_state(Limit{FixedWindow{.limit = 1, .window = kSecond}}, now),
            (LimitState{WindowState{.window_start = kEpoch + kSecond, .count = 0}}));
  EXPECT_EQ(initial_state(Limit{SlidingWindow{.limit = 1, .window = kMicrosPerMinute}}, now),
            LimitState{SlidingWindowState{.window_start = kEpoch - 20 * kSecond}});
  EXPECT_EQ(initial_state(Limit{SlidingLog{.limit = 1, .window = kSecond}}, now),
            LimitState{SlidingLogState{}});
  EXPECT_EQ(initial_state(Limit{Concurrency{.limit = 1, .lease_ttl = kSecond}}, now),
            LimitState{ConcurrencyState{}});
}

TEST(EvaluateTest, StateFitsOnlyTheStateItsAlgorithmKeeps) {
  const Limit smooth = TokenBucket{.capacity = 5, .refill = 1, .period = kSecond};
  const Limit interval = TokenBucket{
      .capacity = 5, .refill = 1, .period = kSecond, .refill_mode = RefillMode::kInterval};
  const Limit fixed = FixedWindow{.limit = 1, .window = kSecond};
  const Limit sliding = SlidingWindow{.limit = 1, .window = kSecond};
  const Limit log = SlidingLog{.limit = 1, .window = kSecond};
  const Limit concurrency = Concurrency{.limit = 1, .lease_ttl = kSecond};
  EXPECT_TRUE(state_fits(smooth, TatState{}));
  EXPECT_FALSE(state_fits(smooth, IntervalBucketState{}));
  EXPECT_TRUE(state_fits(interval, IntervalBucketState{}));
  EXPECT_FALSE(state_fits(interval, TatState{}));
  EXPECT_TRUE(state_fits(fixed, WindowState{}));
  EXPECT_FALSE(state_fits(fixed, SlidingWindowState{}));
  EXPECT_TRUE(state_fits(sliding, SlidingWindowState{}));
  EXPECT_FALSE(state_fits(sliding, WindowState{}));
  EXPECT_TRUE(state_fits(log, SlidingLogState{}));
  EXPECT_FALSE(state_fits(log, ConcurrencyState{}));
  EXPECT_TRUE(state_fits(concurrency, ConcurrencyState{}));
  EXPECT_FALSE(state_fits(concurrency, SlidingLogState{}));
}

TEST(EvaluateTest, ExpiresAtDispatchesOnTheAlgorithm) {
  Policy policy(
      {TokenBucket{.capacity = 2, .refill = 1, .period = kSecond},
       TokenBucket{
           .capacity = 2, .refill = 1, .period = kSecond, .refill_mode = RefillMode::kInterval},
       FixedWindow{.limit = 5, .window = kSecond}, SlidingWindow{.limit = 5, .window = kSecond},
       SlidingLog{.limit = 5, .window = kSecond}, Concurrency{.limit = 5, .lease_ttl = 3 * kSecond},
       LeakyBucket{.rate = 1, .period = kSecond, .max_delay = 5 * kSecond}});
  ASSERT_TRUE(policy.acquire(1, kEpoch + 250 * kMs).verdict.allowed);
  const std::vector<Micros> expected = {
      kEpoch + 1250 * kMs, kEpoch + 1250 * kMs, kEpoch + kSecond,   kEpoch + 2 * kSecond,
      kEpoch + 1250 * kMs, kEpoch + 3250 * kMs, kEpoch + 1250 * kMs};
  for (std::size_t i = 0; i < policy.limits.size(); ++i) {
    SCOPED_TRACE(algorithm_name(policy.limits[i]));
    EXPECT_EQ(expires_at(policy.limits[i], policy.states[i]), expected[i]);
  }
}

// ---- properties over random multi-limit policies ----

std::int64_t any_in(std::int64_t low, std::int64_t high) {
  return *rc::gen::inRange<std::int64_t>(low, high + 1);
}

// Small parameters (µs-scale periods and windows) so random traffic crosses every boundary.
Limit any_limit() {
  switch (*rc::gen::inRange(0, 7)) {
    case 0: {
      TokenBucket bucket{
          .capacity = any_in(1, 10),
          .refill = any_in(1, 5),
          .period = any_in(1, 100),
          .refill_mode = *rc::gen::element(RefillMode::kSmooth, RefillMode::kInterval)};
      if (*rc::gen::arbitrary<bool>()) bucket.initial = any_in(0, bucket.capacity);
      return bucket;
    }
    case 1:
      return Gcra{.rate = any_in(1, 5), .period = any_in(1, 100), .burst = any_in(0, 6)};
    case 2:
      return LeakyBucket{
          .rate = any_in(1, 5), .period = any_in(1, 100), .max_delay = any_in(0, 200)};
    case 3:
      return FixedWindow{.limit = any_in(1, 10), .window = any_in(1, 200)};
    case 4:
      return SlidingWindow{.limit = any_in(1, 10), .window = any_in(1, 200)};
    case 5:
      return SlidingLog{.limit = any_in(1, 10), .window = any_in(1, 200)};
    default:
      return Concurrency{.limit = any_in(1, 10), .lease_ttl = any_in(1, 200)};
  }
}

std::vector<Limit> any_policy() {
  const auto count = static_cast<std::size_t>(any_in(1, 4));
  std::vector<Limit> limits;
  for (std::size_t i = 0; i < count; ++i) {
    limits.push_back(any_limit());
    RC_ASSERT(validate_limit(limits.back(), "").empty());
  }
  return limits;
}

enum class OpKind { kAcquire, kRelease, kRenew };

struct Operation {
  OpKind kind = OpKind::kAcquire;
  Micros gap = 0;
  std::int64_t cost = 0;
  std::size_t pick = 0;  // kRelease / kRenew: which earlier acquisition's lease
};

std::ostream& operator<<(std::ostream& os, const Operation& op) {
  constexpr std::string_view kNames[] = {"acquire", "release", "renew"};
  return os << "{" << kNames[static_cast<int>(op.kind)] << ", gap " << op.gap << ", cost "
            << op.cost << ", pick " << op.pick << "}";
}

std::vector<Operation> any_operations() {
  const auto gap = rc::gen::weightedOneOf<Micros>({{3, rc::gen::just<Micros>(0)},
                                                   {3, rc::gen::inRange<Micros>(1, 10)},
                                                   {3, rc::gen::inRange<Micros>(0, 300)}});
  const auto cost =
      rc::gen::weightedOneOf<std::int64_t>({{2, rc::gen::just<std::int64_t>(0)},
                                            {6, rc::gen::inRange<std::int64_t>(1, 4)},
                                            {2, rc::gen::inRange<std::int64_t>(1, 13)}});
  const auto kind = rc::gen::weightedElement<OpKind>(
      {{8, OpKind::kAcquire}, {1, OpKind::kRelease}, {1, OpKind::kRenew}});
  return *rc::gen::container<std::vector<Operation>>(rc::gen::apply(
      [](OpKind k, Micros g, std::int64_t c, std::size_t p) {
        return Operation{.kind = k, .gap = g, .cost = c, .pick = p};
      },
      kind, gap, cost, rc::gen::inRange<std::size_t>(0, 64)));
}

// The one-limit decision and commit, dispatched here independently of evaluate.cc.
template <typename F>
auto with_params(const Limit& limit, F&& f) {
  return std::visit([&](const auto& params) { return f(params); }, limit);
}

Verdict decide_one(const Limit& limit, const LimitState& state, std::int64_t cost, Micros now) {
  return with_params(limit, [&](const auto& params) {
    return std::visit(
        [&](const auto& typed) -> Verdict {
          if constexpr (requires { decide(params, typed, cost, now); }) {
            return decide(params, typed, cost, now);
          } else {
            RC_FAIL("state of another algorithm");
          }
        },
        state);
  });
}

void commit_one(const Limit& limit, LimitState& state, std::int64_t cost, Micros now,
                std::string_view lease) {
  with_params(limit, [&](const auto& params) {
    std::visit(
        [&](auto& typed) {
          if constexpr (requires { commit(params, typed, cost, now, lease); }) {
            commit(params, typed, cost, now, lease);
          } else if constexpr (requires { commit(params, typed, cost, now); }) {
            commit(params, typed, cost, now);
          } else {
            RC_FAIL("state of another algorithm");
          }
        },
        state);
    return 0;
  });
}

// The limit that should decide (see PolicyVerdict): when all allow, the first with the lowest
// remaining; else the first that can never grant the cost; else the first with the longest
// retry_after.
std::size_t tightest(const std::vector<Verdict>& verdicts) {
  const bool allowed =
      std::all_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.allowed; });
  std::size_t best = 0;
  for (std::size_t i = 1; i < verdicts.size(); ++i) {
    const Verdict& v = verdicts[i];
    const Verdict& b = verdicts[best];
    if (allowed) {
      if (v.remaining < b.remaining) best = i;
    } else if (!v.allowed) {
      const bool v_never = !v.retry_after;
      const bool b_never = !b.allowed && !b.retry_after;
      if (b.allowed || (v_never && !b_never) ||
          (!v_never && !b_never && *v.retry_after > *b.retry_after)) {
        best = i;
      }
    }
  }
  return best;
}

bool holds_live(const LimitState& state, const std::string& lease, Micros now) {
  const auto* leases = std::get_if<ConcurrencyState>(&state);
  if (leases == nullptr) return false;
  return std::any_of(leases->leases.begin(), leases->leases.end(),
                     [&](const Lease& l) { return l.id == lease && l.expires_at > now; });
}

struct Event {
  const std::vector<Limit>& limits;
  const std::vector<LimitState>& before;
  const std::vector<LimitState>& after;
  const PolicyVerdict& verdict;
  Micros now;
  std::int64_t cost;
  const std::string& lease;
};

// Replays random traffic against a random policy, releasing and renewing earlier leases
// in between, and calls check(event) after each acquisition.
template <typename Check>
void replay(Check&& check) {
  const std::vector<Limit> limits = any_policy();
  Micros now = kEpoch + *rc::gen::inRange<Micros>(0, 1'000'000);
  std::vector<LimitState> states;
  for (const Limit& limit : limits) states.push_back(initial_state(limit, now));
  std::vector<std::string> leases;
  for (const Operation& op : any_operations()) {
    now += op.gap;
    if (op.kind != OpKind::kAcquire) {
      if (leases.empty()) continue;
      const std::string& lease = leases[op.pick % leases.size()];
      bool live = false;
      for (const LimitState& state : states) live = live || holds_live(state, lease, now);
      if (op.kind == OpKind::kRelease) {
        RC_ASSERT(release_lease(limits, states, lease, now) == live);
        for (const LimitState& state : states) RC_ASSERT(!holds_live(state, lease, now));
      } else {
        RC_ASSERT(renew_lease(limits, states, lease, now) == live);
      }
      continue;
    }
    leases.push_back("lease-" + std::to_string(leases.size()));
    const std::vector<LimitState> before = states;
    const PolicyVerdict verdict = evaluate(limits, states, op.cost, now, leases.back());
    check(Event{limits, before, states, verdict, now, op.cost, leases.back()});
  }
}

RC_GTEST_PROP(EvaluateProperty, AllOrNothingWithTheTightestLimitReported, ()) {
  replay([](const Event& e) {
    std::vector<Verdict> verdicts;
    std::optional<Micros> longest_delay;
    for (std::size_t i = 0; i < e.limits.size(); ++i) {
      verdicts.push_back(decide_one(e.limits[i], e.before[i], e.cost, e.now));
      if (verdicts.back().delay) {
        longest_delay = std::max(longest_delay.value_or(0), *verdicts.back().delay);
      }
    }
    const bool allowed =
        std::all_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.allowed; });
    RC_ASSERT(e.verdict.verdict.allowed == allowed);
    const std::size_t index = tightest(verdicts);
    RC_ASSERT(e.verdict.limit_index == index);
    Verdict expected = verdicts[index];
    if (allowed) expected.delay = longest_delay;
    RC_ASSERT(e.verdict.verdict == expected);
    if (!allowed || e.cost == 0) {
      RC_ASSERT(e.after == e.before);  // nothing charged
      return;
    }
    // Every limit is charged exactly as on its own; concurrency limits record the lease.
    std::vector<LimitState> charged = e.before;
    for (std::size_t i = 0; i < e.limits.size(); ++i) {
      commit_one(e.limits[i], charged[i], e.cost, e.now, e.lease);
    }
    RC_ASSERT(e.after == charged);
  });
}

RC_GTEST_PROP(EvaluateProperty, PolicyRetryAfterIsExact, ()) {
  replay([](const Event& e) {
    const Verdict& verdict = e.verdict.verdict;
    if (verdict.allowed) return;
    bool never = false;
    for (std::size_t i = 0; i < e.limits.size(); ++i) {
      const Verdict one = decide_one(e.limits[i], e.before[i], e.cost, e.now);
      never = never || (!one.allowed && !one.retry_after);
    }
    RC_ASSERT(verdict.retry_after.has_value() == !never);
    if (never) return;
    const Micros retry = *verdict.retry_after;
    RC_ASSERT(retry >= 1);
    std::vector<LimitState> at_retry = e.before;
    RC_ASSERT(evaluate(e.limits, at_retry, e.cost, e.now + retry, "x").verdict.allowed);
    std::vector<LimitState> just_before = e.before;
    RC_ASSERT(!evaluate(e.limits, just_before, e.cost, e.now + retry - 1, "x").verdict.allowed);
    RC_ASSERT(just_before == e.before);
  });
}

TEST(EvaluateTest, OneLimitDecidedAndChargedAloneAgreesWithEvaluate) {
  // decide_limit / commit_limit: what evaluate does per limit, for stores that combine verdicts
  // themselves (the Redis module).
  const std::vector<Limit> limits = {Gcra{.rate = 10, .period = kSecond, .burst = 2},
                                     Concurrency{.limit = 2, .lease_ttl = 5 * kSecond}};
  Policy together(limits);
  std::vector<LimitState> apart = together.states;
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const Micros now = kEpoch + i * 10 * kMs;
    const std::string lease = "lease-" + std::to_string(i);
    const PolicyVerdict expected = evaluate(limits, together.states, 1, now, lease);
    std::vector<Verdict> verdicts;
    for (std::size_t j = 0; j < limits.size(); ++j) {
      verdicts.push_back(decide_limit(limits[j], apart[j], 1, now));
    }
    const PolicyVerdict combined = combine_verdicts(verdicts);
    EXPECT_EQ(combined.verdict, expected.verdict);
    EXPECT_EQ(combined.limit_index, expected.limit_index);
    if (combined.verdict.allowed) {
      for (std::size_t j = 0; j < limits.size(); ++j)
        commit_limit(limits[j], apart[j], 1, now, lease);
    }
    EXPECT_EQ(apart, together.states);
  }
}

}  // namespace
}  // namespace sluice::algorithm
