#include "sluice/service/defence_metrics.h"

#include <mutex>

#include "sluice/service/decision_metrics.h"

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
    std::shared_lock lock(mutex_);
    if (auto it = policies_.find(name); it != policies_.end()) return *it->second;
  }
  std::unique_lock lock(mutex_);
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

void DefenceMetrics::record_rollout(std::string_view name, bool enforced, bool allowed,
                                    bool shadow_denied) {
  PolicyCounters& counters = policy(name);
  Group& group = enforced ? counters.enforced : counters.shadowed;
  if (shadow_denied) {
    group.shadow_denied.fetch_add(1, std::memory_order_relaxed);
  } else {
    (allowed ? group.allowed : group.denied).fetch_add(1, std::memory_order_relaxed);
  }
}

std::pair<DefenceMetrics::RolloutCounts, DefenceMetrics::RolloutCounts> DefenceMetrics::rollout(
    std::string_view name) const {
  std::shared_lock lock(mutex_);
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
  std::shared_lock lock(mutex_);
  write_help(out, "sluice_over_limit_cache_hits_total", "counter",
             "Denials answered from the local over-limit cache, without a store call.");
  for (const auto& [name, counters] : policies_) {
    out += "sluice_over_limit_cache_hits_total{policy=\"" + escape_label(name) + "\"} " +
           std::to_string(counters->cache_hits.load()) + "\n";
  }
  write_help(out, "sluice_over_limit_cache_entries", "gauge",
             "Subjects the over-limit cache holds as denied until a known instant.");
  out += "sluice_over_limit_cache_entries " + std::to_string(cache_entries()) + "\n";
  write_help(out, "sluice_over_limit_cache_evictions_total", "counter",
             "Unexpired over-limit cache entries dropped to stay within its capacity.");
  out += "sluice_over_limit_cache_evictions_total " + std::to_string(cache_evictions()) + "\n";
  write_help(out, "sluice_circuit_breaker_state", "gauge",
             "The store's circuit breaker: 0 closed, 1 open, 2 half-open.");
  out += "sluice_circuit_breaker_state " + std::to_string(static_cast<int>(breaker_state())) + "\n";
  write_help(out, "sluice_circuit_breaker_transitions_total", "counter",
             "Transitions of the store's circuit breaker, by the state entered.");
  for (BreakerState state : {BreakerState::kOpen, BreakerState::kHalfOpen, BreakerState::kClosed}) {
    out += "sluice_circuit_breaker_transitions_total{to=\"" +
           std::string(breaker_state_name(state)) + "\"} " +
           std::to_string(breaker_transitions(state)) + "\n";
  }
  write_help(out, "sluice_circuit_breaker_rejections_total", "counter",
             "Decisions sent straight to the policy's on_store_failure while the breaker was "
             "open (no store call, no timeout).");
  out += "sluice_circuit_breaker_rejections_total " + std::to_string(breaker_rejections()) + "\n";
  write_help(out, "sluice_rollout_decisions_total", "counter",
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
      const std::string labels =
          "policy=\"" + escape_label(name) + "\",group=\"" + std::string(group_name) + "\"";
      out += "sluice_rollout_decisions_total{" + labels + ",outcome=\"allowed\"} " +
             std::to_string(group->allowed.load()) + "\n";
      out += "sluice_rollout_decisions_total{" + labels + ",outcome=\"denied\"} " +
             std::to_string(group->denied.load()) + "\n";
      out += "sluice_rollout_decisions_total{" + labels + ",outcome=\"shadow_denied\"} " +
             std::to_string(group->shadow_denied.load()) + "\n";
    }
  }
}

}  // namespace sluice::service
