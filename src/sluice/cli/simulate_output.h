// What `sluice simulate` prints (docs/backtesting.md): the readable table and the --json
// document of a back-test's reports, outcome changes and recommendations.
#pragma once

#include <string>
#include <vector>

#include "sluice/simulate/recommend.h"
#include "sluice/simulate/replay.h"
#include "sluice/simulate/traffic_stream.h"

namespace sluice::cli {

struct SimulateResult {
  std::vector<std::string> traffic;  // the files, as named
  simulate::TrafficSummary summary;
  Micros bucket = 0;
  std::vector<simulate::VariantReport> reports;
  std::vector<simulate::OutcomeChanges> changes;
  // Per variant, in the order of `reports`; empty without --recommend.
  std::vector<std::vector<simulate::LimitRecommendation>> recommendations;
  std::optional<simulate::Target> target;
};

// The readable output; `over_time`: include each variant's denials over time.
std::string simulate_table(const SimulateResult& result, bool over_time);
// The --json document, pretty-printed with a final newline.
std::string simulate_json(const SimulateResult& result);

}  // namespace sluice::cli
