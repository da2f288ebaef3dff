// Tests of the concurrency limit (DESIGN.md §2): acquire / release / renew, leases expiring at
// exactly acquisition + lease_ttl, scenario tables probing each expiry ±1 µs, and rapidcheck
// properties over random acquire / release / renew sequences checked against a model of leases.
#include "sluice/algorithm/concurrency.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/validate.h"

namespace sluice::algorithm {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kSecond = kMicrosPerSecond;
constexpr auto kNever = std::nullopt;

// ---- scenario table ----

enum class Op { kAcquire, kRelease, kRenew };

struct Step {
  std::string_view description;
  Micros at;  // after kEpoch
  Op op;
  std::string_view lease;
  std::int64_t cost;  // kAcquire only
  // kAcquire: allowed; kRelease / kRenew: what release / renew returned.
  bool ok;
  // kAcquire: the verdict's; kRelease / kRenew: a peek's right after the operation.
  std::int64_t remaining;
  std::optional<Micros> retry_after;
  Micros reset_after;
};

void run_scenario(const Concurrency& params, std::span<const Step> steps) {
  ConcurrencyState state = initial_state(params, kEpoch);
  for (const Step& step : steps) {
    SCOPED_TRACE(step.description);
    const Micros now = kEpoch + step.at;
    Verdict verdict;
    switch (step.op) {
      case Op::kAcquire:
        verdict = decide(params, state, step.cost, now);
        EXPECT_EQ(verdict.allowed, step.ok);
        if (verdict.allowed && step.cost > 0) commit(params, state, step.cost, now, step.lease);
        break;
      case Op::kRelease:
        EXPECT_EQ(release(state, step.lease, now), step.ok);
        verdict = decide(params, state, 0, now);
        break;
      case Op::kRenew:
        EXPECT_EQ(renew(params, state, step.lease, now), step.ok);
        verdict = decide(params, state, 0, now);
        break;
    }
    EXPECT_EQ(verdict.limit, params.limit);
    EXPECT_EQ(verdict.remaining, step.remaining);
    EXPECT_EQ(verdict.retry_after, step.retry_after);
    EXPECT_EQ(verdict.reset_after, step.reset_after);
    EXPECT_EQ(verdict.delay, std::nullopt);
  }
}

TEST(ConcurrencyTest, ScenarioLeasesExpireExactlyAtAcquisitionPlusLeaseTtl) {
  const Concurrency params{.limit = 3, .lease_ttl = 10 * kSecond};
  constexpr Micros s = kSecond;
  constexpr auto kAcquire = Op::kAcquire;
  constexpr auto kRelease = Op::kRelease;
  constexpr auto kRenew = Op::kRenew;
  // description, at, op, lease, cost, ok, remaining, retry_after, reset_after
  constexpr Step kSteps[] = {
      {"lease a holds 1 unit until 10 s", 0, kAcquire, "a", 1, true, 2, kNever, 10 * s},
      {"lease b holds 2 units until 11 s", s, kAcquire, "b", 2, true, 0, kNever, 10 * s},
      {"a peek on a full limit is allowed", s, kAcquire, "", 0, true, 0, kNever, 10 * s},
      {"denied until a expires (no early release assumed)", 2 * s, kAcquire, "c", 1, false, 0,
       8 * s, 9 * s},
      {"one µs before a expires", 10 * s - 1, kAcquire, "c", 1, false, 0, 1, s + 1},
      {"cost 2 also needs b to expire", 10 * s - 1, kAcquire, "c", 2, false, 0, s + 1, s + 1},
      {"a cost above the limit is never grantable", 10 * s - 1, kAcquire, "c", 4, false, 0, kNever,
       s + 1},
      {"a is dead exactly at acquisition + lease_ttl", 10 * s, kAcquire, "c", 1, true, 0, kNever,
       10 * s},
      {"releasing an expired lease frees nothing", 10 * s, kRelease, "a", 0, false, 0, kNever,
       10 * s},
      {"renewing b extends it to now + lease_ttl", 10 * s + 1, kRenew, "b", 0, true, 0, kNever,
       10 * s},
      {"the renewed b still holds its units", 11 * s, kAcquire, "d", 1, false, 0, 9 * s, 9 * s + 1},
      {"releasing b frees its units at once", 11 * s, kRelease, "b", 0, true, 2, kNever, 9 * s},
      {"release is idempotent", 11 * s, kRelease, "b", 0, false, 2, kNever, 9 * s},
      {"d takes the freed units", 11 * s, kAcquire, "d", 2, true, 0, kNever, 10 * s},
      {"renewing d one µs before it dies; c has died at 20 s", 21 * s - 1, kRenew, "d", 0, true, 1,
       kNever, 10 * s},
      {"one µs before the renewed d expires", 31 * s - 2, kAcquire, "e", 2, false, 1, 1, 1},
      {"d cannot be renewed once dead", 31 * s - 1, kRenew, "d", 0, false, 3, kNever, 0},
      {"all units are free", 31 * s - 1, kAcquire, "e", 3, true, 0, kNever, 10 * s},
  };
  run_scenario(params, kSteps);
}

TEST(ConcurrencyTest, ReleaseIsIdempotentAndFreesUnitsAtOnce) {
  const Concurrency params{.limit = 2, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 2, kEpoch, "a");
  EXPECT_FALSE(decide(params, state, 1, kEpoch + 1).allowed);
  EXPECT_TRUE(release(state, "a", kEpoch + 1));
  EXPECT_TRUE(state.leases.empty());
  EXPECT_EQ(decide(params, state, 2, kEpoch + 1).remaining, 0);
  EXPECT_TRUE(decide(params, state, 2, kEpoch + 1).allowed);
  EXPECT_FALSE(release(state, "a", kEpoch + 1));
  EXPECT_FALSE(release(state, "never-acquired", kEpoch + 1));
}

TEST(ConcurrencyTest, ReleaseFreesOnlyTheNamedLease) {
  const Concurrency params{.limit = 3, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch, "a");
  commit(params, state, 2, kEpoch, "b");
  EXPECT_TRUE(release(state, "b", kEpoch + 5));
  ASSERT_EQ(state.leases.size(), 1u);
  EXPECT_EQ(state.leases.front().id, "a");
  EXPECT_EQ(decide(params, state, 0, kEpoch + 5).remaining, 2);
}

TEST(ConcurrencyTest, RenewFailsForUnknownAndExpiredLeases) {
  const Concurrency params{.limit = 1, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch, "a");
  EXPECT_FALSE(renew(params, state, "unknown", kEpoch + 1));
  EXPECT_TRUE(renew(params, state, "a", kEpoch + kSecond - 1));
  EXPECT_EQ(state.leases.front().expires_at, kEpoch + 2 * kSecond - 1);
  EXPECT_FALSE(renew(params, state, "a", kEpoch + 2 * kSecond - 1));
  EXPECT_TRUE(decide(params, state, 1, kEpoch + 2 * kSecond - 1).allowed);
}

TEST(ConcurrencyTest, RenewNeverShortensALease) {
  const Concurrency params{.limit = 1, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch + kSecond, "a");
  EXPECT_TRUE(renew(params, state, "a", kEpoch + 500'000));  // a clock that stepped back
  EXPECT_EQ(state.leases.front().expires_at, kEpoch + 2 * kSecond);
}

TEST(ConcurrencyTest, CommitDropsExpiredLeases) {
  const Concurrency params{.limit = 3, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch, "a");
  commit(params, state, 1, kEpoch + 1, "b");
  commit(params, state, 1, kEpoch + kSecond, "c");  // a dies exactly now
  ASSERT_EQ(state.leases.size(), 2u);
  EXPECT_EQ(state.leases[0].id, "b");
  EXPECT_EQ(state.leases[1], (Lease{.id = "c", .expires_at = kEpoch + 2 * kSecond, .cost = 1}));
}

TEST(ConcurrencyTest, CostAboveLimitIsDeniedWithoutRetryAfterAndChargesNothing) {
  const Concurrency params{.limit = 2, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  const Verdict empty = decide(params, state, 3, kEpoch);
  EXPECT_FALSE(empty.allowed);
  EXPECT_EQ(empty.retry_after, std::nullopt);
  EXPECT_EQ(empty.remaining, 2);
  EXPECT_EQ(empty.reset_after, 0);
  commit(params, state, 1, kEpoch, "a");
  const Verdict held = decide(params, state, 3, kEpoch + 10);
  EXPECT_FALSE(held.allowed);
  EXPECT_EQ(held.retry_after, std::nullopt);
  EXPECT_EQ(held.remaining, 1);
  EXPECT_EQ(held.reset_after, kSecond - 10);
}

TEST(ConcurrencyTest, RetryAfterWaitsForLeasesInExpiryOrderNotAcquisitionOrder) {
  const Concurrency params{.limit = 3, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  commit(params, state, 2, kEpoch, "a");
  commit(params, state, 1, kEpoch + 100, "b");
  ASSERT_TRUE(renew(params, state, "a", kEpoch + 500));  // a now outlives b
  const Verdict one = decide(params, state, 1, kEpoch + 600);
  EXPECT_EQ(one.retry_after, kSecond + 100 - 600);  // b expires first
  const Verdict three = decide(params, state, 3, kEpoch + 600);
  EXPECT_EQ(three.retry_after, kSecond + 500 - 600);  // needs a too
}

TEST(ConcurrencyTest, ExpiresAtIsTheLastLeaseExpiry) {
  const Concurrency params{.limit = 3, .lease_ttl = kSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  EXPECT_EQ(expires_at(params, state), 0);
  commit(params, state, 1, kEpoch + 7, "a");
  commit(params, state, 1, kEpoch + 3, "b");  // clock stepped back
  EXPECT_EQ(expires_at(params, state), kEpoch + kSecond + 7);
}

// ---- properties ----

enum class OpKind { kAcquire, kRelease, kRenew };

struct Operation {
  OpKind kind = OpKind::kAcquire;
  Micros gap = 0;
  std::int64_t cost = 0;  // kAcquire
  std::size_t pick = 0;   // kRelease / kRenew: which lease (possibly one never acquired)
};

std::ostream& operator<<(std::ostream& os, const Operation& op) {
  constexpr std::string_view kNames[] = {"acquire", "release", "renew"};
  return os << "{" << kNames[static_cast<int>(op.kind)] << ", gap " << op.gap << ", cost "
            << op.cost << ", pick " << op.pick << "}";
}

Concurrency any_params() {
  const Concurrency params{
      .limit = *rc::gen::inRange<std::int64_t>(1, 13),
      .lease_ttl = *rc::gen::weightedOneOf<Micros>({{6, rc::gen::inRange<Micros>(1, 40)},
                                                    {3, rc::gen::inRange<Micros>(40, 5'000)},
                                                    {1, rc::gen::just(kSecond)}})};
  RC_ASSERT(validate_limit(params, "").empty());
  return params;
}

std::vector<Operation> any_operations(const Concurrency& params) {
  const Micros ttl = params.lease_ttl;
  const auto gap = rc::gen::weightedOneOf<Micros>({
      {3, rc::gen::just<Micros>(0)},
      {2, rc::gen::inRange<Micros>(1, 4)},
      {4, rc::gen::inRange<Micros>(0, ttl + 1)},
      {2, rc::gen::element(ttl - 1, ttl, ttl + 1)},
      {1, rc::gen::inRange<Micros>(0, 3 * ttl + 2)},
  });
  const auto cost = rc::gen::weightedOneOf<std::int64_t>({
      {2, rc::gen::just<std::int64_t>(0)},
      {6, rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(params.limit, 3) + 1)},
      {3, rc::gen::inRange<std::int64_t>(1, params.limit + 1)},
      {1, rc::gen::inRange<std::int64_t>(params.limit + 1, params.limit + 3)},
  });
  const auto kind = rc::gen::weightedElement<OpKind>(
      {{6, OpKind::kAcquire}, {2, OpKind::kRelease}, {1, OpKind::kRenew}});
  return *rc::gen::container<std::vector<Operation>>(rc::gen::apply(
      [](OpKind k, Micros g, std::int64_t c, std::size_t p) {
        return Operation{.kind = k, .gap = g, .cost = c, .pick = p};
      },
      kind, gap, cost, rc::gen::inRange<std::size_t>(0, 64)));
}

Micros any_start() { return kEpoch + *rc::gen::inRange<Micros>(0, 1'000'000); }

// One step of a replay. For kAcquire, `verdict` is decide's; for the others, `ok` is what
// release / renew returned.
struct Event {
  OpKind kind;
  const ConcurrencyState& before;
  const ConcurrencyState& after;
  Verdict verdict;
  bool ok = false;
  Micros now;
  std::int64_t cost;
  const std::string& lease;  // acquired, released or renewed
};

// Replays `ops` from `start`, committing each allowed acquire with cost > 0 as lease
// "lease-<i>" (as evaluate does), and calls check(event) after each.
template <typename Check>
void replay(const Concurrency& params, Micros start, const std::vector<Operation>& ops,
            Check&& check) {
  ConcurrencyState state = initial_state(params, start);
  std::vector<std::string> ids;  // every lease ever named, acquired or not
  Micros now = start;
  for (const Operation& op : ops) {
    now += op.gap;
    const ConcurrencyState before = state;
    if (op.kind == OpKind::kAcquire) {
      ids.push_back("lease-" + std::to_string(ids.size()));
      const Verdict verdict = decide(params, before, op.cost, now);
      if (verdict.allowed && op.cost > 0) commit(params, state, op.cost, now, ids.back());
      check(Event{.kind = op.kind,
                  .before = before,
                  .after = state,
                  .verdict = verdict,
                  .now = now,
                  .cost = op.cost,
                  .lease = ids.back()});
      continue;
    }
    const std::string target = op.pick < ids.size() ? ids[op.pick] : std::string("never-acquired");
    const bool ok = op.kind == OpKind::kRelease ? release(state, target, now)
                                                : renew(params, state, target, now);
    check(Event{.kind = op.kind,
                .before = before,
                .after = state,
                .ok = ok,
                .now = now,
                .cost = 0,
                .lease = target});
  }
}

struct ModelLease {
  std::string id;
  Micros expires_at;
  std::int64_t cost;
  bool released = false;
  bool live(Micros now) const { return !released && expires_at > now; }
};

RC_GTEST_PROP(ConcurrencyProperty, LiveLeasedUnitsNeverExceedTheLimitAtAnyInstant, ()) {
  const Concurrency params = any_params();
  std::vector<ModelLease> model;
  const auto live_units = [&](Micros now) {
    std::int64_t units = 0;
    for (const ModelLease& lease : model) units += lease.live(now) ? lease.cost : 0;
    return units;
  };
  const auto find = [&](const std::string& id) -> ModelLease* {
    for (ModelLease& lease : model) {
      if (lease.id == id) return &lease;
    }
    return nullptr;
  };
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    const std::int64_t held = live_units(e.now);
    ModelLease* lease = find(e.lease);
    switch (e.kind) {
      case OpKind::kAcquire:
        // Live units only grow at an acquisition, so checking here covers every instant.
        RC_ASSERT(e.verdict.allowed == (held + e.cost <= params.limit));
        RC_ASSERT(e.verdict.remaining == params.limit - held - (e.verdict.allowed ? e.cost : 0));
        if (e.verdict.allowed && e.cost > 0) {
          model.push_back({.id = e.lease, .expires_at = e.now + params.lease_ttl, .cost = e.cost});
          RC_ASSERT(live_units(e.now) <= params.limit);
        }
        break;
      case OpKind::kRelease:
        RC_ASSERT(e.ok == (lease != nullptr && lease->live(e.now)));
        if (lease != nullptr) lease->released = true;
        break;
      case OpKind::kRenew:
        RC_ASSERT(e.ok == (lease != nullptr && lease->live(e.now)));
        if (e.ok) lease->expires_at = std::max(lease->expires_at, e.now + params.lease_ttl);
        break;
    }
    RC_ASSERT(decide(params, e.after, 0, e.now).remaining == params.limit - live_units(e.now));
  });
}

RC_GTEST_PROP(ConcurrencyProperty, RetryAfterIsExactWithoutEarlyReleases, ()) {
  const Concurrency params = any_params();
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    if (e.kind != OpKind::kAcquire) return;
    if (e.verdict.allowed) {
      RC_ASSERT(!e.verdict.retry_after);
      return;
    }
    RC_ASSERT(e.verdict.retry_after.has_value() == (e.cost <= params.limit));
    if (!e.verdict.retry_after) return;
    const Micros retry = *e.verdict.retry_after;
    RC_ASSERT(retry >= 1);
    RC_ASSERT(decide(params, e.before, e.cost, e.now + retry).allowed);
    RC_ASSERT(!decide(params, e.before, e.cost, e.now + retry - 1).allowed);
  });
}

RC_GTEST_PROP(ConcurrencyProperty, DenialsAndPeeksLeaveTheStateUnchanged, ()) {
  const Concurrency params = any_params();
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    if (e.kind != OpKind::kAcquire) return;
    const std::array<Limit, 1> limits{params};
    std::array<LimitState, 1> states{e.before};
    const PolicyVerdict policy = evaluate(limits, states, e.cost, e.now, e.lease);
    RC_ASSERT(policy.verdict == e.verdict);
    if (!e.verdict.allowed || e.cost == 0) {
      RC_ASSERT(std::get<ConcurrencyState>(states[0]) == e.before);
    } else {
      RC_ASSERT(std::get<ConcurrencyState>(states[0]) == e.after);
    }
  });
}

RC_GTEST_PROP(ConcurrencyProperty, ClockSteppingBackCreatesNoCapacity, ()) {
  const Concurrency params = any_params();
  std::optional<Micros> last_commit;
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    if (e.kind == OpKind::kAcquire && e.verdict.allowed && e.cost > 0) last_commit = e.now;
    if (!last_commit) return;
    const Micros ttl = params.lease_ttl;
    for (const Micros back : {Micros{1}, ttl / 2 + 1, ttl, ttl + 1, 2 * ttl + 1}) {
      const Micros earlier = *last_commit - back;
      RC_ASSERT(decide(params, e.after, 0, earlier).remaining <=
                decide(params, e.after, 0, *last_commit).remaining);
      for (const std::int64_t cost : {std::int64_t{1}, e.cost, params.limit}) {
        if (decide(params, e.after, cost, earlier).allowed) {
          RC_ASSERT(decide(params, e.after, cost, *last_commit).allowed);
        }
      }
    }
  });
}

RC_GTEST_PROP(ConcurrencyProperty, StateEqualsInitialFromExpiresAt, ()) {
  const Concurrency params = any_params();
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    const Micros from = std::max(expires_at(params, e.after), e.now);
    for (const Micros t : {from, from + 1, from + params.lease_ttl}) {
      const ConcurrencyState fresh = initial_state(params, t);
      for (const std::int64_t cost :
           {std::int64_t{0}, std::int64_t{1}, params.limit, params.limit + 1}) {
        RC_ASSERT(decide(params, e.after, cost, t) == decide(params, fresh, cost, t));
      }
    }
  });
}

// remaining is exactly what could still be acquired; a denial reports the state as a peek does;
// an allowed acquire reports the state after it; reset_after is when every lease is dead, and
// not one µs earlier.
RC_GTEST_PROP(ConcurrencyProperty, VerdictsDescribeTheStateTheyLeave, ()) {
  const Concurrency params = any_params();
  replay(params, any_start(), any_operations(params), [&](const Event& e) {
    if (e.kind != OpKind::kAcquire) return;
    const Verdict peek = decide(params, e.before, 0, e.now);
    RC_ASSERT(peek.allowed);
    RC_ASSERT(decide(params, e.before, peek.remaining, e.now).allowed);
    RC_ASSERT(!decide(params, e.before, peek.remaining + 1, e.now).allowed);
    const Verdict reported = e.verdict.allowed ? decide(params, e.after, 0, e.now) : peek;
    RC_ASSERT(e.verdict.remaining == reported.remaining);
    RC_ASSERT(e.verdict.reset_after == reported.reset_after);
    const Micros unused_at = e.now + reported.reset_after;
    const ConcurrencyState fresh = initial_state(params, unused_at);
    RC_ASSERT(decide(params, e.after, 0, unused_at) == decide(params, fresh, 0, unused_at));
    if (reported.reset_after > 0) {
      RC_ASSERT(decide(params, e.after, 0, unused_at - 1).remaining < params.limit);
    }
  });
}

}  // namespace
}  // namespace sluice::algorithm
