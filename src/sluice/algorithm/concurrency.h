// concurrency: at most `limit` units held by live leases (seed 000 "instantaneous concurrency",
// Stripe's concurrent-request limiter). Acquiring commits a lease under an id chosen by the
// store; the holder releases it when done or renews it before `lease_ttl` passes; a lease whose
// holder died expires on its own. Same four functions as token_bucket.h, plus release/renew.
#pragma once

#include <cstdint>
#include <string_view>

#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

ConcurrencyState initial_state(const Concurrency& params, Micros now);
// retry_after assumes no lease is released early: it is when enough leases expire.
Verdict decide(const Concurrency& params, const ConcurrencyState& state, std::int64_t cost,
               Micros now);
// Adds lease `lease_id` holding `cost` units until now + lease_ttl; drops expired leases.
void commit(const Concurrency& params, ConcurrencyState& state, std::int64_t cost, Micros now,
            std::string_view lease_id);
Micros expires_at(const Concurrency& params, const ConcurrencyState& state);

// Frees the lease; idempotent. True when a live lease was freed.
bool release(ConcurrencyState& state, std::string_view lease_id, Micros now);
// Extends a live lease to now + lease_ttl. False when the lease is unknown or already expired.
bool renew(const Concurrency& params, ConcurrencyState& state, std::string_view lease_id,
           Micros now);

}  // namespace sluice::algorithm
