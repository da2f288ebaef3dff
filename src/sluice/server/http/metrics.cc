#include "sluice/server/http/metrics.h"

#include "sluice/core/mutex.h"
#include "sluice/core/prometheus_text.h"

namespace sluice::http {

std::atomic<std::uint64_t>& Metrics::http_counter(std::string_view route, int status) {
  {
    ReaderLock lock(mutex_);
    if (auto it = http_.find(route); it != http_.end()) {
      if (auto code = it->second.find(status); code != it->second.end()) return *code->second;
    }
  }
  WriterLock lock(mutex_);
  auto it = http_.find(route);
  if (it == http_.end()) it = http_.emplace(std::string(route), decltype(it->second)()).first;
  auto [code, inserted] = it->second.try_emplace(status, nullptr);
  if (inserted) code->second = std::make_unique<std::atomic<std::uint64_t>>(0);
  return *code->second;
}

void Metrics::record_http(std::string_view route, int status, Micros duration) {
  http_counter(route, status).fetch_add(1, std::memory_order_relaxed);
  http_duration_.observe(duration);
}

std::string Metrics::render(const service::DecisionMetrics* decisions) const {
  std::string out;
  if (decisions != nullptr) decisions->write(out);
  ReaderLock lock(mutex_);
  PrometheusText text(out);
  text.family("sluice_http_requests_total", MetricType::kCounter,
              "HTTP requests by route and status code.");
  for (const auto& [route, codes] : http_) {
    for (const auto& [code, count] : codes) {
      text.sample("sluice_http_requests_total", {{"route", route}, {"code", std::to_string(code)}},
                  count->load());
    }
  }
  text.family("sluice_http_request_duration_seconds", MetricType::kHistogram,
              "Time from a complete request to its response being handed to the socket.");
  http_duration_.write(text, "sluice_http_request_duration_seconds");
  return out;
}

void write_memory_store_metrics(std::string& out, const store::MemoryStoreStats& stats) {
  PrometheusText text(out);
  text.single("sluice_memory_store_subjects", MetricType::kGauge,
              "Subjects the in-process store holds (bounded by memory_max_keys).", stats.keys);
  text.single("sluice_memory_store_refusals_total", MetricType::kCounter,
              "New subjects refused because the in-process store was full of live state; "
              "their policy's on_store_failure decided them.",
              stats.refusals);
  text.single("sluice_memory_store_expirations_total", MetricType::kCounter,
              "Subjects the in-process store dropped because their state had expired.",
              stats.expirations);
}

void write_connection_metrics(std::string& out, const HttpServer::ConnectionStats& stats) {
  PrometheusText text(out);
  text.single("sluice_http_connections", MetricType::kGauge, "HTTP connections open now.",
              stats.open);
  text.single("sluice_http_connections_evicted_total", MetricType::kCounter,
              "Idle HTTP connections closed to admit a new one at max_connections or "
              "max_connections_per_peer.",
              stats.evicted);
  text.single("sluice_http_connections_refused_total", MetricType::kCounter,
              "New HTTP connections closed at a cap because no connection was idle.",
              stats.refused);
  text.single("sluice_http_tls_handshake_failures_total", MetricType::kCounter,
              "TLS handshakes refused (protocol, certificate, plain HTTP on the HTTPS "
              "port), broken off, or past tls_handshake_timeout.",
              stats.tls_handshake_failures);
  text.single("sluice_access_log_dropped_total", MetricType::kCounter,
              "Access-log lines dropped because stderr did not keep up (8 MiB were waiting).",
              stats.access_log_dropped);
  text.single("sluice_http_buffered_body_bytes", MetricType::kGauge,
              "Request-body bytes held in memory against max_buffered_body_bytes.",
              stats.buffered_body_bytes);
  text.single("sluice_http_body_budget_refusals_total", MetricType::kCounter,
              "Request bodies refused (503) because max_buffered_body_bytes was held.",
              stats.body_budget_refusals);
}

}  // namespace sluice::http
