#include "sluice/service/defence_metrics.h"

#include "sluice/core/mutex.h"
#include "sluice/core/prometheus_text.h"

namespace sluice::service {

std::string_view breaker_state_name(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed:
      return "closed";
    case BreakerState::kOpen:
      return "open";
    case BreakerState::kHalfOpen:
      return "half_open";
  }
  return "closed";
}

DefenceMetrics::PolicyCounters& DefenceMetrics::policy(std::string_view name) {
  {
    ReaderLock lock(mutex_);
    if (auto it = policies_.find(name); it != policies_.end()) return *it->second;
  }
  WriterLock lock(mutex_);
  auto [it, inserted] = policies_.try_emplace(std::string(name), nullptr);
  if (inserted) it->second = std::make_unique<PolicyCounters>();
  return *it->second;
}

void DefenceMetrics::record_cache_hit(std::string_view name) {
  cache_hits_.fetch_add(1, std::memory_order_relaxed);
  policy(name).cache_hits.fetch_add(1, std::memory_order_relaxed);
}

void DefenceMetrics::record_breaker_transition(BreakerState state) {
  breaker_state_.store(state, std::memory_order_relaxed);
  transitions_[static_cast<std::size_t>(state)].fetch_add(1, std::memory_order_relaxed);
}

void DefenceMetrics::record_rollout(std::string_view name, RolloutGroup group,
                                    RolloutOutcome outcome) {
  PolicyCounters& counters = policy(name);
  Group& counted = group == RolloutGroup::kEnforced ? counters.enforced : counters.shadowed;
  switch (outcome) {
    case RolloutOutcome::kAllowed:
      counted.allowed.fetch_add(1, std::memory_order_relaxed);
      break;
    case RolloutOutcome::kDenied:
      counted.denied.fetch_add(1, std::memory_order_relaxed);
      break;
    case RolloutOutcome::kShadowDenied:
      counted.shadow_denied.fetch_add(1, std::memory_order_relaxed);
      break;
  }
}

std::pair<DefenceMetrics::RolloutCounts, DefenceMetrics::RolloutCounts> DefenceMetrics::rollout(
    std::string_view name) const {
  ReaderLock lock(mutex_);
  auto it = policies_.find(name);
  if (it == policies_.end()) return {};
  const auto read = [](const Group& g) {
    return RolloutCounts{.allowed = g.allowed.load(),
                         .denied = g.denied.load(),
                         .shadow_denied = g.shadow_denied.load()};
  };
  return {read(it->second->enforced), read(it->second->shadowed)};
}

void DefenceMetrics::write(std::string& out) const {
  ReaderLock lock(mutex_);
  PrometheusText text(out);
  text.family("sluice_over_limit_cache_hits_total", MetricType::kCounter,
              "Denials answered from the local over-limit cache, without a store call.");
  for (const auto& [name, counters] : policies_) {
    text.sample("sluice_over_limit_cache_hits_total", {{"policy", name}},
                counters->cache_hits.load());
  }
  text.family("sluice_over_limit_cache_entries", MetricType::kGauge,
              "Subjects the over-limit cache holds as denied until a known instant.");
  text.sample("sluice_over_limit_cache_entries", {}, std::to_string(cache_entries()));
  text.single("sluice_over_limit_cache_evictions_total", MetricType::kCounter,
              "Unexpired over-limit cache entries dropped to stay within its capacity.",
              cache_evictions());
  text.single("sluice_circuit_breaker_state", MetricType::kGauge,
              "The store's circuit breaker: 0 closed, 1 open, 2 half-open.",
              static_cast<std::uint64_t>(breaker_state()));
  text.family("sluice_circuit_breaker_transitions_total", MetricType::kCounter,
              "Transitions of the store's circuit breaker, by the state entered.");
  for (BreakerState state : {BreakerState::kOpen, BreakerState::kHalfOpen, BreakerState::kClosed}) {
    text.sample("sluice_circuit_breaker_transitions_total", {{"to", breaker_state_name(state)}},
                breaker_transitions(state));
  }
  text.single("sluice_circuit_breaker_rejections_total", MetricType::kCounter,
              "Decisions sent straight to the policy's on_store_failure while the breaker was "
              "open (no store call, no timeout).",
              breaker_rejections());
  text.family("sluice_rollout_decisions_total", MetricType::kCounter,
              "Decisions of policies under a staged rollout, by group (subjects enforced or "
              "shadowed) and outcome.");
  const auto total = [](const Group& g) {
    return g.allowed.load() + g.denied.load() + g.shadow_denied.load();
  };
  for (const auto& [name, counters] : policies_) {
    // Only policies under a rollout have counts; both groups show once either has one.
    if (total(counters->enforced) + total(counters->shadowed) == 0) continue;
    for (const auto& [group_name, group] :
         {std::pair<std::string_view, const Group*>{"enforced", &counters->enforced},
          std::pair<std::string_view, const Group*>{"shadowed", &counters->shadowed}}) {
      for (const auto& [outcome, count] :
           {std::pair{"allowed", group->allowed.load()}, std::pair{"denied", group->denied.load()},
            std::pair{"shadow_denied", group->shadow_denied.load()}}) {
        text.sample("sluice_rollout_decisions_total",
                    {{"policy", name}, {"group", group_name}, {"outcome", outcome}}, count);
      }
    }
  }
}

}  // namespace sluice::service
