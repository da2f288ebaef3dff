// Decision as the decision service reports it: the one result type of sluice/decision.h, which the
// Limiter completes with the policy, mode and degraded / shadow flags. Its JSON: decision_json.h.
#pragma once

#include <cstdint>

#include "sluice/decision.h"
#include "sluice/time.h"

namespace sluice::service {

using Decision = sluice::Decision;

// Microseconds to whole milliseconds, rounded up so a caller that waits that long is never early.
std::int64_t millis_rounded_up(Micros duration);

}  // namespace sluice::service
