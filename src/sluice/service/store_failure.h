// What a store error means to the decision pipeline: which errors a failure mode covers (an
// outage, a broken reply), which are the store refusing our own credentials, and the status of a
// decision the open circuit breaker kept from the store. One vocabulary for the Limiter, its
// defences and the front ends that log or count store errors.
#pragma once

#include "sluice/status.h"

namespace sluice::service {

// True for the store errors a failure mode covers (unreachable, timed out, overloaded, broken
// reply); false for the caller's own mistakes.
bool is_store_failure(const Status& status);
// True for the failures of a store that is down, slow or full — an outage, which the failure
// modes cover; false for a store that is misconfigured (credentials refused, permissions
// missing, a cluster node behind a single-server URL), which no waiting will fix.
bool is_store_outage(const Status& status);
// True for a store that refused the server's own credentials or permissions (NOAUTH, WRONGPASS,
// NOPERM): at start a configuration error, while serving a revoked credential.
bool is_store_refusal(const Status& status);
// The status of a decision the open circuit breaker kept from the store (not a store error).
Status circuit_open();
bool is_circuit_open(const Status& status);

}  // namespace sluice::service
