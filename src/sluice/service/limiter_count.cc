// The Limiter's bookkeeping of an answered decision (limiter.h): its stats, the decision and
// rollout metrics, and the observer `sluice serve` records decisions with.
#include "sluice/service/limiter.h"

namespace sluice::service {
namespace {

// The rollout counters' words for what the pipeline knows as flags.
DefenceMetrics::RolloutGroup rollout_group(const Decision& decision) {
  return decision.mode == policy::Mode::kEnforce ? DefenceMetrics::RolloutGroup::kEnforced
                                                 : DefenceMetrics::RolloutGroup::kShadowed;
}
DefenceMetrics::RolloutOutcome rollout_outcome(const Decision& decision) {
  if (decision.shadow_denied) return DefenceMetrics::RolloutOutcome::kShadowDenied;
  return decision.verdict.allowed ? DefenceMetrics::RolloutOutcome::kAllowed
                                  : DefenceMetrics::RolloutOutcome::kDenied;
}

}  // namespace

void Limiter::count(const DecisionRequest& request, const policy::Policy& policy,
                    const Decision& decision, Micros started) {
  if (policy.rollout) {
    metrics_.defences().record_rollout(policy.name, rollout_group(decision),
                                       rollout_outcome(decision));
  }
  ++(decision.verdict.allowed ? allowed_ : denied_);
  if (decision.shadow_denied) ++shadow_denied_;
  if (decision.degraded) ++degraded_;
  metrics_.record(decision, steady_.now() - started);
  if (options_.on_decision) options_.on_decision(request, decision);
}

}  // namespace sluice::service
