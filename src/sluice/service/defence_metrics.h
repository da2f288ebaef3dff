// DefenceMetrics: the counters of the defences in front of the store (docs/defences.md), kept
// beside DecisionMetrics and written with it, in the Prometheus text format:
//   sluice_over_limit_cache_hits_total{policy}   denials answered from the cache, no store call
//   sluice_over_limit_cache_entries              gauge: subjects cached as over their limit
//   sluice_over_limit_cache_evictions_total      live entries dropped to stay within capacity
//   sluice_circuit_breaker_state                 gauge: 0 closed, 1 open, 2 half-open
//   sluice_circuit_breaker_transitions_total{to} to="open"|"half_open"|"closed"
//   sluice_circuit_breaker_rejections_total      decisions sent to the failure mode while open
//   sluice_rollout_decisions_total{policy,group,outcome}
//                                                staged rollout: group="enforced"|"shadowed",
//                                                outcome="allowed"|"denied"|"shadow_denied"
// Label values are bounded: policies that exist. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/mutex.h"

namespace sluice::service {

enum class BreakerState : std::uint8_t { kClosed = 0, kOpen = 1, kHalfOpen = 2 };
std::string_view breaker_state_name(BreakerState state);

class DefenceMetrics {
 public:
  void record_cache_hit(std::string_view policy);
  void add_cache_entries(std::int64_t delta) {
    cache_entries_.fetch_add(delta, std::memory_order_relaxed);
  }
  void record_cache_eviction() { cache_evictions_.fetch_add(1, std::memory_order_relaxed); }
  std::uint64_t cache_hits() const { return cache_hits_.load(std::memory_order_relaxed); }
  std::int64_t cache_entries() const { return cache_entries_.load(std::memory_order_relaxed); }
  std::uint64_t cache_evictions() const { return cache_evictions_.load(std::memory_order_relaxed); }

  // A transition of the circuit breaker to `state` (also sets the state gauge).
  void record_breaker_transition(BreakerState state);
  void record_breaker_rejection() { breaker_rejections_.fetch_add(1, std::memory_order_relaxed); }
  BreakerState breaker_state() const { return breaker_state_.load(std::memory_order_relaxed); }
  std::uint64_t breaker_transitions(BreakerState to) const {
    return transitions_[static_cast<std::size_t>(to)].load(std::memory_order_relaxed);
  }
  std::uint64_t breaker_rejections() const {
    return breaker_rejections_.load(std::memory_order_relaxed);
  }

  // One answered decision of a policy under a staged rollout.
  struct RolloutCounts {
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;
    std::uint64_t shadow_denied = 0;
  };
  enum class RolloutGroup : std::uint8_t { kEnforced, kShadowed };  // which subjects
  enum class RolloutOutcome : std::uint8_t { kAllowed, kDenied, kShadowDenied };
  void record_rollout(std::string_view policy, RolloutGroup group, RolloutOutcome outcome);
  // {enforced group, shadowed group} of `policy` (zeros when it had none).
  std::pair<RolloutCounts, RolloutCounts> rollout(std::string_view policy) const;

  void write(std::string& out) const;

 private:
  struct Group {
    std::atomic<std::uint64_t> allowed{0};
    std::atomic<std::uint64_t> denied{0};
    std::atomic<std::uint64_t> shadow_denied{0};
  };
  struct PolicyCounters {
    std::atomic<std::uint64_t> cache_hits{0};
    Group enforced;
    Group shadowed;
  };
  PolicyCounters& policy(std::string_view name);

  mutable SharedMutex mutex_;  // guards the map's structure, not the counters
  std::map<std::string, std::unique_ptr<PolicyCounters>, std::less<>> policies_
      SLUICE_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> cache_hits_{0};
  std::atomic<std::int64_t> cache_entries_{0};
  std::atomic<std::uint64_t> cache_evictions_{0};
  std::atomic<BreakerState> breaker_state_{BreakerState::kClosed};
  std::atomic<std::uint64_t> transitions_[3] = {};
  std::atomic<std::uint64_t> breaker_rejections_{0};
};

}  // namespace sluice::service
