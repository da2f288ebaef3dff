// Metrics of the decision server, exposed in the Prometheus text format (version 0.0.4) on
// GET /metrics: the Limiter's decision metrics (service/decision_metrics.h: decisions, shadow
// denials, degraded decisions, store errors, decision duration per policy) and the server's own:
//   sluice_http_requests_total{route,code}
//   sluice_http_request_duration_seconds     histogram, all routes
// Label values are bounded: route patterns. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/core/mutex.h"
#include "sluice/server/http/server.h"
#include "sluice/service/decision_metrics.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/time.h"

namespace sluice::http {

using service::Histogram;

class Metrics {
 public:
  void record_http(std::string_view route, int status, Micros duration);

  // The exposition text: `decisions` (when set), then the HTTP metrics.
  std::string render(const service::DecisionMetrics* decisions = nullptr) const;

 private:
  std::atomic<std::uint64_t>& http_counter(std::string_view route, int status);

  mutable SharedMutex mutex_;  // guards the map's structure, not the counters
  // route -> status -> count
  std::map<std::string, std::map<int, std::unique_ptr<std::atomic<std::uint64_t>>>, std::less<>>
      http_ SLUICE_GUARDED_BY(mutex_);
  Histogram http_duration_;
};

// The in-process store's own metrics, for DecisionApiOptions::store_metrics:
//   sluice_memory_store_subjects            gauge: subjects held (bounded by memory_max_keys)
//   sluice_memory_store_refusals_total      new subjects refused because the store was full of
//                                           live state (decided by the policy's failure mode)
//   sluice_memory_store_expirations_total   subjects dropped because their state expired
void write_memory_store_metrics(std::string& out, const store::MemoryStoreStats& stats);

// The HTTP server's connections: open now, and evicted or refused at its caps; the request-body
// budget: bytes held now, bodies refused at it.
void write_connection_metrics(std::string& out, const HttpServer::ConnectionStats& stats);

}  // namespace sluice::http
