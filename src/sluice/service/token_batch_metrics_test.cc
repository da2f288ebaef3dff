#include "sluice/service/token_batch_metrics.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::service {
namespace {

TEST(LeaseMetricsTest, WritesEachCounterAndTheLiveNodeGaugeWithTheirValues) {
  std::string out;
  write_token_batch_metrics(
      out, {.takes = 3, .taken = 2500, .given_back = 40, .local = 2497, .give_back_errors = 1}, 4);
  for (const std::string line :
       {"sluice_token_lease_takes_total 3\n", "sluice_token_lease_taken_units_total 2500\n",
        "sluice_token_lease_returned_units_total 40\n",
        "sluice_token_lease_local_decisions_total 2497\n",
        "sluice_token_lease_give_back_errors_total 1\n", "sluice_live_nodes 4\n",
        "# TYPE sluice_live_nodes gauge\n", "# TYPE sluice_token_lease_takes_total counter\n"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << " not in:\n" << out;
  }
}

}  // namespace
}  // namespace sluice::service
