// leaky_bucket: pacing with a bounded queue (nginx limit_req burst+delay, Sentinel "queue").
// A request is scheduled at s = max(TAT, now), admitted if s - now <= max_delay and told to wait
// delay = s - now; the TAT then moves to s + cost * period / rate. Same four functions as
// token_bucket.h.
#pragma once

#include <cstdint>

#include "sluice/algorithm/charge.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

// Unit requests an idle queue admits at once: floor(max_delay * rate / period) + 1.
std::int64_t queue_capacity(const LeakyBucket& params);

TatState initial_state(const LeakyBucket& params, Micros now);
// A cost whose emission time cost * period / rate passes kMaxHorizon (100 years), or whose
// cost * period reaches 2^53, can never be granted.
Verdict decide(const LeakyBucket& params, const TatState& state, std::int64_t cost, Micros now);
void commit(const LeakyBucket& params, TatState& state, std::int64_t cost, Micros now);
Micros expires_at(const LeakyBucket& params, const TatState& state);

// Quota operations (token_bucket.h lists them). The balance is the free slots counted past the
// end of the queue, signed: floor((max_delay·rate - ahead) / period) + 1 with ahead the queue's
// length scaled by rate, so it falls below 0 once a charge queues work beyond max_delay. Unlike
// an acquire, which admits any cost whose start is within max_delay, a charge must leave that
// balance >= -max_debt.
std::int64_t balance(const LeakyBucket& params, const TatState& state, Micros now);
ChargeFit charge_fit(const LeakyBucket& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const LeakyBucket& params, TatState& state, std::int64_t cost, Micros now);

}  // namespace sluice::algorithm
