#include "sluice/service/lease_metrics.h"

#include <cstdint>
#include <string_view>

namespace sluice::service {
namespace {

void metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            std::uint64_t value) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace

void write_lease_metrics(std::string& out, const TokenLeaseStats& leases, std::size_t live_nodes) {
  metric(out, "sluice_token_lease_takes_total", "counter",
         "Token-lease take calls the store answered.", leases.takes);
  metric(out, "sluice_token_lease_taken_units_total", "counter", "Units taken into token leases.",
         leases.taken);
  metric(out, "sluice_token_lease_returned_units_total", "counter",
         "Unused leased units the store took back.", leases.given_back);
  metric(out, "sluice_token_lease_local_decisions_total", "counter",
         "Decisions allowed from a held token lease, with no store call.", leases.local);
  metric(out, "sluice_token_lease_give_back_errors_total", "counter",
         "Give-backs the store did not take (their units are lost: under-admission).",
         leases.give_back_errors);
  metric(out, "sluice_live_nodes", "gauge",
         "Live sluice nodes the heartbeat last read (0: never read; on_store_failure split "
         "grants 1/this).",
         live_nodes);
}

}  // namespace sluice::service
