// One decision over all limits of a policy, all or nothing (DESIGN.md §2): allowed only if every
// limit allows; if any denies, none is charged — except a fixed window that counts denials
// (DeniedCost::kCounted), which takes a cost it denies itself all the same. Dispatches each
// Limit to its algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

struct PolicyVerdict {
  // The deciding limit's verdict: when allowed, the one with the lowest remaining; when denied,
  // the one with the longest retry_after (a limit that can never grant the cost wins). `delay`
  // is the longest delay any limit asks for.
  Verdict verdict;
  std::size_t limit_index = 0;
  // Whether the states changed: an allowed cost, or a denied one a counting window took.
  bool wrote = false;
};

// State of a subject the store holds nothing for under `limit`.
LimitState initial_state(const Limit& limit, Micros now);
// False when `state` is of another state family (the policy changed): treat it as absent. gcra,
// smooth token_bucket and leaky_bucket share TatState (a theoretical arrival time), so a policy
// switching among them keeps its subjects' TAT, as the Redis store does.
bool state_fits(const Limit& limit, const LimitState& state);
// Instant from which `state` equals initial_state; stores expire it then.
Micros expires_at(const Limit& limit, const LimitState& state);

// One limit's own verdict for `cost`, and charging it (precondition for commit_limit: the verdict
// allowed; a concurrency limit records lease `lease_id`). Precondition: state_fits(limit, state).
// For stores that keep each limit's state apart and combine the verdicts themselves (the Redis
// module: redis_module/), so they decide with this code rather than a copy of it.
Verdict decide_limit(const Limit& limit, const LimitState& state, std::int64_t cost, Micros now);
void commit_limit(const Limit& limit, LimitState& state, std::int64_t cost, Micros now,
                  std::string_view lease_id);
// What a denial of `cost` does to one limit: a fixed window counting denials
// (DeniedCost::kCounted) that denies the cost itself counts it; nothing else changes. Returns
// whether the state changed.
bool commit_denied_limit(const Limit& limit, LimitState& state, std::int64_t cost, Micros now);

// Decides `cost` for one subject. Preconditions: limits non-empty, states.size() ==
// limits.size(), state_fits(limits[i], states[i]). When allowed with cost > 0, every state is
// charged (concurrency limits record lease `lease_id`); otherwise states are untouched.
PolicyVerdict evaluate(std::span<const Limit> limits, std::span<LimitState> states,
                       std::int64_t cost, Micros now, std::string_view lease_id);

// The policy's verdict from each limit's own verdict for one cost (in limit order, non-empty),
// chosen as evaluate chooses it: for stores that decide limit by limit (a dry run).
PolicyVerdict combine_verdicts(std::span<const Verdict> verdicts);

// Frees / extends lease `lease_id` in every concurrency limit; true if any had it live.
bool release_lease(std::span<const Limit> limits, std::span<LimitState> states,
                   std::string_view lease_id, Micros now);
bool renew_lease(std::span<const Limit> limits, std::span<LimitState> states,
                 std::string_view lease_id, Micros now);

bool uses_leases(std::span<const Limit> limits);

}  // namespace sluice::algorithm
