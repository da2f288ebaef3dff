#include "sluice/service/token_batch_metrics.h"

#include "sluice/core/prometheus_text.h"

namespace sluice::service {

void write_token_batch_metrics(std::string& out, const TokenBatchStats& leases,
                               std::size_t live_nodes) {
  PrometheusText text(out);
  text.single("sluice_token_lease_takes_total", MetricType::kCounter,
              "Token-lease take calls the store answered.", leases.takes);
  text.single("sluice_token_lease_taken_units_total", MetricType::kCounter,
              "Units taken into token leases.", leases.taken);
  text.single("sluice_token_lease_returned_units_total", MetricType::kCounter,
              "Unused leased units the store took back.", leases.given_back);
  text.single("sluice_token_lease_local_decisions_total", MetricType::kCounter,
              "Decisions allowed from a held token lease, with no store call.", leases.local);
  text.single("sluice_token_lease_give_back_errors_total", MetricType::kCounter,
              "Give-backs the store did not take (their units are lost: under-admission).",
              leases.give_back_errors);
  text.single("sluice_live_nodes", MetricType::kGauge,
              "Live sluice nodes the heartbeat last read (0: never read; on_store_failure split "
              "grants 1/this).",
              live_nodes);
}

}  // namespace sluice::service
