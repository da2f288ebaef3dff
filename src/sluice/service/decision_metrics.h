// DecisionMetrics: the decision counters every front end shares (HTTP, gRPC and the library),
// kept by the Limiter so no front end counts a decision twice or not at all, and written in the
// Prometheus text format (version 0.0.4, core/prometheus_text.h):
//   sluice_decisions_total{policy,outcome="allowed"|"denied"}
//   sluice_shadow_denials_total{policy}      allowed only because the policy is in shadow mode
//   sluice_degraded_decisions_total{policy}  decided by on_store_failure (store unreachable)
//   sluice_penalty_blocked_total{policy}     denied by the penalty box (blocked_until set)
//   sluice_quota_operations_total{policy,operation="charge"|"refund"|"reserve"|"settle",
//                                 outcome="applied"|"refused"}
//                                            quota operations (docs/quotas.md), not decisions
//   sluice_quota_units_total{policy,operation}  cost units the applied ones named
//   sluice_store_errors_total                store calls that failed (or passed their deadline)
//   sluice_store_refusals_total              of those, refused for the server's own credentials
//                                            or permissions (NOAUTH, WRONGPASS, NOPERM)
//   sluice_decision_duration_seconds{policy} histogram: request handed to the Limiter -> answer,
//                                            waiting included
//   sluice_decisions_pending                 gauge: decisions in flight (max_pending bounds it)
//   sluice_decisions_overloaded_total        requests refused at max_pending (503 / UNAVAILABLE)
//   and the defences' (defence_metrics.h): over-limit cache, circuit breaker, staged rollout
// Label values are bounded: policies that exist. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "sluice/core/mutex.h"
#include "sluice/core/prometheus_text.h"
#include "sluice/service/defence_metrics.h"
#include "sluice/time.h"

namespace sluice {
struct Decision;
}  // namespace sluice

namespace sluice::service {

class Histogram {
 public:
  // Upper bounds in microseconds, ascending; +Inf is implicit.
  static constexpr std::array<Micros, 14> kBounds = {50,      100,     250,     500,      1'000,
                                                     2'500,   5'000,   10'000,  25'000,   50'000,
                                                     100'000, 250'000, 500'000, 1'000'000};

  void observe(Micros value);
  // `name`_bucket{<labels>,le=...}, `name`_sum{<labels>} (seconds), `name`_count{<labels>}.
  void write(PrometheusText& text, std::string_view name,
             std::span<const MetricLabel> labels = {}) const;

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::int64_t> sum_micros_{0};
};

class DecisionMetrics {
 public:
  // Counts one answered decision and how long it took.
  void record(const Decision& decision, Micros duration);
  // Counts one answered quota operation (`operation`: 0 charge, 1 refund, 2 reserve, 3 settle,
  // as store::QuotaOperation): applied, or refused (a charge beyond max_debt); `units` its cost.
  void record_quota(std::string_view policy, int operation, bool applied, std::int64_t units);
  // Counts one failed store call; `refusal`: refused for the server's credentials/permissions.
  void record_store_error(bool refusal) {
    store_errors_.fetch_add(1, std::memory_order_relaxed);
    if (refusal) store_refusals_.fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t store_errors() const { return store_errors_.load(std::memory_order_relaxed); }
  std::uint64_t store_refusals() const { return store_refusals_.load(std::memory_order_relaxed); }
  // Decisions in flight: the Limiter takes and gives back places here (LimiterOptions::
  // max_pending), so the gauge is the bound's own count.
  std::atomic<std::size_t>& pending() { return pending_; }
  std::size_t pending() const { return pending_.load(std::memory_order_relaxed); }
  void record_overloaded(std::size_t requests) {
    overloaded_.fetch_add(requests, std::memory_order_relaxed);
  }
  std::uint64_t overloaded() const { return overloaded_.load(std::memory_order_relaxed); }

  // The defences' counters (defence_metrics.h), written with these.
  DefenceMetrics& defences() { return defences_; }
  const DefenceMetrics& defences() const { return defences_; }

  // Appends the exposition text of every metric above, then the defences'.
  void write(std::string& out) const;

  // The counters of one policy, as read now (each exact; together not one atomic snapshot).
  struct Counts {
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;
    std::uint64_t shadow_denied = 0;
    std::uint64_t degraded = 0;
    std::uint64_t blocked = 0;  // denied by the penalty box
  };
  // Every policy that has had a decision since the start, by name.
  std::map<std::string, Counts, std::less<>> counts() const;

 private:
  struct PolicyCounters {
    std::atomic<std::uint64_t> allowed{0};
    std::atomic<std::uint64_t> denied{0};
    std::atomic<std::uint64_t> shadow_denied{0};
    std::atomic<std::uint64_t> degraded{0};
    std::atomic<std::uint64_t> blocked{0};
    std::array<std::atomic<std::uint64_t>, 4> quota_applied{};
    std::array<std::atomic<std::uint64_t>, 4> quota_refused{};
    std::array<std::atomic<std::uint64_t>, 4> quota_units{};
    Histogram duration;
  };
  PolicyCounters& policy(std::string_view name);

  mutable SharedMutex mutex_;  // guards the map's structure, not the counters
  std::map<std::string, std::unique_ptr<PolicyCounters>, std::less<>> policies_
      SLUICE_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> store_errors_{0};
  std::atomic<std::uint64_t> store_refusals_{0};
  std::atomic<std::size_t> pending_{0};
  std::atomic<std::uint64_t> overloaded_{0};
  DefenceMetrics defences_;
};

}  // namespace sluice::service
