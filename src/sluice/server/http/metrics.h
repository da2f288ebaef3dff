// Metrics of the decision server, exposed in the Prometheus text format (version 0.0.4) on
// GET /metrics. Written by hand: a handful of counters and two histograms need no library.
//   sluice_decisions_total{policy,outcome="allowed"|"denied"}
//   sluice_shadow_denials_total{policy}      allowed only because the policy is in shadow mode
//   sluice_degraded_decisions_total{policy}  decided by on_store_failure (store unreachable)
//   sluice_store_errors_total                store calls that failed
//   sluice_store_latency_seconds             histogram of decision calls (store round trip)
//   sluice_http_requests_total{route,code}
//   sluice_http_request_duration_seconds     histogram, all routes
// Label values are bounded: policies that exist, and route patterns. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "sluice/core/time.h"
#include "sluice/service/decision.h"

namespace sluice::http {

class Histogram {
 public:
  // Upper bounds in microseconds, ascending; +Inf is implicit.
  static constexpr std::array<Micros, 14> kBounds = {50,      100,     250,     500,      1'000,
                                                     2'500,   5'000,   10'000,  25'000,   50'000,
                                                     100'000, 250'000, 500'000, 1'000'000};

  void observe(Micros value);
  // `name`_bucket{le=...}, `name`_sum (seconds), `name`_count.
  void write(std::string& out, std::string_view name) const;

 private:
  std::array<std::atomic<std::uint64_t>, kBounds.size() + 1> buckets_{};
  std::atomic<std::int64_t> sum_micros_{0};
};

class Metrics {
 public:
  // Counts one decision of `decision.policy`.
  void record_decision(const service::Decision& decision);
  void record_store_latency(Micros latency) { store_latency_.observe(latency); }
  void record_store_error() { store_errors_.fetch_add(1, std::memory_order_relaxed); }
  void record_http(std::string_view route, int status, Micros duration);

  // The exposition text. `extra_store_errors` is added to the store error count (errors the
  // limiter counted itself).
  std::string render(std::uint64_t extra_store_errors = 0) const;

 private:
  struct PolicyCounters {
    std::atomic<std::uint64_t> allowed{0};
    std::atomic<std::uint64_t> denied{0};
    std::atomic<std::uint64_t> shadow_denied{0};
    std::atomic<std::uint64_t> degraded{0};
  };
  PolicyCounters& policy(std::string_view name);
  std::atomic<std::uint64_t>& http_counter(std::string_view route, int status);

  mutable std::shared_mutex mutex_;  // guards the maps' structure, not the counters
  std::map<std::string, std::unique_ptr<PolicyCounters>, std::less<>> policies_;
  // route -> status -> count
  std::map<std::string, std::map<int, std::unique_ptr<std::atomic<std::uint64_t>>>, std::less<>>
      http_;
  std::atomic<std::uint64_t> store_errors_{0};
  Histogram store_latency_;
  Histogram http_duration_;
};

// Escapes a label value for the text format (backslash, double quote, newline).
std::string escape_label(std::string_view value);

}  // namespace sluice::http
