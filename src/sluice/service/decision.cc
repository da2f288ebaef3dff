#include "sluice/service/decision.h"

#include <nlohmann/json.hpp>

namespace sluice::service {
namespace {

nlohmann::json optional_millis(const std::optional<Micros>& duration) {
  if (!duration) return nullptr;
  return millis_rounded_up(*duration);
}

}  // namespace

std::int64_t millis_rounded_up(Micros duration) {
  return duration / kMicrosPerMilli + (duration % kMicrosPerMilli > 0 ? 1 : 0);
}

nlohmann::json decision_to_json(const Decision& decision) {
  const algorithm::Verdict& v = decision.verdict;
  return {{"allowed", v.allowed},
          {"limit", v.limit},
          {"remaining", v.remaining},
          {"retry_after_ms", optional_millis(v.retry_after)},
          {"reset_after_ms", millis_rounded_up(v.reset_after)},
          {"delay_ms", optional_millis(v.delay)},
          {"lease", decision.lease ? nlohmann::json(*decision.lease) : nlohmann::json(nullptr)},
          {"policy", decision.policy},
          {"limit_index", decision.limit_index},
          {"mode", policy::mode_name(decision.mode)},
          {"degraded", decision.degraded},
          {"shadow_denied", decision.shadow_denied}};
}

}  // namespace sluice::service
