// Scaling a limit to a fraction of its budget: what one node may grant on its own under failure
// mode `local` while the shared store is unreachable (e.g. 1/N of every limit for N nodes).
#pragma once

#include "sluice/algorithm/limit.h"

namespace sluice::service {

// Counts (capacity, window limits, concurrency) become max(1, floor(count · fraction)); rates
// slow down by stretching their period to ceil(period / fraction), which keeps the arithmetic
// exact. Precondition: 0 < fraction <= 1.
algorithm::Limit scale_limit(const algorithm::Limit& limit, double fraction);

}  // namespace sluice::service
