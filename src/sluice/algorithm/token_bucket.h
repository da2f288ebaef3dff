// token_bucket (smooth and interval refill) and gcra: pure decisions over explicit state.
//
// Each algorithm offers the same four functions, overloaded on its parameter type:
//   initial_state(params, now)           state of a subject never seen (or whose state expired)
//   decide(params, state, cost, now)     the verdict; changes nothing
//   commit(params, state, cost, now)     charges an allowed request (precondition: decide allowed)
//   expires_at(params, state)            from then on the state equals initial_state (TTL)
// `cost` >= 0; 0 peeks. No I/O, locks, logging or clock reads.
//
// And the quota operations (quota.h), with the same shape in leaky_bucket.h and window.h:
//   balance(params, state, now)                     units grantable now, signed (< 0: a debt)
//   charge_fit(params, state, cost, max_debt, now)  whether the balance after charging `cost`
//                                                   stays >= -max_debt (then commit() charges it)
//   refund(params, state, cost, now)                gives `cost` units back, never above the limit
#pragma once

#include <cstdint>

#include "sluice/algorithm/charge.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

// Smooth refill keeps a TatState (the instant the bucket will be full again); interval refill
// keeps an IntervalBucketState.
LimitState initial_state(const TokenBucket& params, Micros now);

Verdict decide(const TokenBucket& params, const TatState& state, std::int64_t cost, Micros now);
void commit(const TokenBucket& params, TatState& state, std::int64_t cost, Micros now);
Micros expires_at(const TokenBucket& params, const TatState& state);

Verdict decide(const TokenBucket& params, const IntervalBucketState& state, std::int64_t cost,
               Micros now);
void commit(const TokenBucket& params, IntervalBucketState& state, std::int64_t cost, Micros now);
Micros expires_at(const TokenBucket& params, const IntervalBucketState& state);

// GCRA is the smooth token bucket with capacity burst + 1, stored as one TAT.
TatState initial_state(const Gcra& params, Micros now);
Verdict decide(const Gcra& params, const TatState& state, std::int64_t cost, Micros now);
void commit(const Gcra& params, TatState& state, std::int64_t cost, Micros now);
Micros expires_at(const Gcra& params, const TatState& state);

// Quota operations. A debt moves the TAT (or the token count) further out, so later requests
// wait for the refill to repay it; a refund moves it back, never before now (a full bucket).
std::int64_t balance(const TokenBucket& params, const TatState& state, Micros now);
ChargeFit charge_fit(const TokenBucket& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const TokenBucket& params, TatState& state, std::int64_t cost, Micros now);

std::int64_t balance(const TokenBucket& params, const IntervalBucketState& state, Micros now);
ChargeFit charge_fit(const TokenBucket& params, const IntervalBucketState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const TokenBucket& params, IntervalBucketState& state, std::int64_t cost, Micros now);

std::int64_t balance(const Gcra& params, const TatState& state, Micros now);
ChargeFit charge_fit(const Gcra& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const Gcra& params, TatState& state, std::int64_t cost, Micros now);

}  // namespace sluice::algorithm
