// Token batches (token_batches.h; the metrics keep the documented token_lease names) and the
// node heartbeat, in the Prometheus text format (docs/defences.md,
// docs/server.md):
//   sluice_token_lease_takes_total             take calls the store answered
//   sluice_token_lease_taken_units_total       units taken into leases
//   sluice_token_lease_returned_units_total    unused units the store took back
//   sluice_token_lease_local_decisions_total   decisions allowed from a held lease, no store call
//   sluice_token_lease_give_back_errors_total  give-backs the store did not take
//   sluice_live_nodes                          gauge: live nodes the heartbeat last read
#pragma once

#include <cstddef>
#include <string>

#include "sluice/service/token_batches.h"

namespace sluice::service {

// Appends the lines above to `out`.
void write_token_batch_metrics(std::string& out, const TokenBatchStats& leases,
                               std::size_t live_nodes);

}  // namespace sluice::service
