// Which algorithms token leases serve (service/token_batches.h, docs/defences.md "Token leasing
// for hot keys"): those whose units are spent and counted, so that units taken now and spent a
// moment later are the same admissions.
#pragma once

#include <span>

#include "sluice/algorithm/limit.h"
#include "sluice/status.h"

namespace sluice::algorithm {

// InvalidArgument naming the first limit token leases cannot serve: leaky buckets (pacing: each
// unit has its own start time), sliding logs (one entry per admitted unit, at its own instant)
// and concurrency limits (units held and released, not spent), and calendar fixed windows (their
// bounds travel with each call). Token buckets, GCRA, fixed and sliding windows pass.
Status check_token_lease_limits(std::span<const Limit> limits);

}  // namespace sluice::algorithm
