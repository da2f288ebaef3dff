#include "sluice/server/http/metrics.h"

#include <mutex>

namespace sluice::http {

std::atomic<std::uint64_t>& Metrics::http_counter(std::string_view route, int status) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = http_.find(route); it != http_.end()) {
      if (auto code = it->second.find(status); code != it->second.end()) return *code->second;
    }
  }
  std::unique_lock lock(mutex_);
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
  std::shared_lock lock(mutex_);
  service::write_help(out, "sluice_http_requests_total", "counter",
                      "HTTP requests by route and status code.");
  for (const auto& [route, codes] : http_) {
    for (const auto& [code, count] : codes) {
      out += "sluice_http_requests_total{route=\"" + escape_label(route) + "\",code=\"" +
             std::to_string(code) + "\"} " + std::to_string(count->load()) + "\n";
    }
  }
  service::write_help(out, "sluice_http_request_duration_seconds", "histogram",
                      "Time from a complete request to its response being handed to the socket.");
  http_duration_.write(out, "sluice_http_request_duration_seconds");
  return out;
}

namespace {

// One metric without labels: its HELP and TYPE lines, then its value.
void write_unlabelled(std::string& out, std::string_view name, std::string_view type,
                      std::string_view help, std::uint64_t value) {
  service::write_help(out, name, type, help);
  out.append(name).append(" ").append(std::to_string(value)).append("\n");
}

}  // namespace

void write_memory_store_metrics(std::string& out, const store::MemoryStoreStats& stats) {
  write_unlabelled(out, "sluice_memory_store_subjects", "gauge",
                   "Subjects the in-process store holds (bounded by memory_max_keys).", stats.keys);
  write_unlabelled(out, "sluice_memory_store_refusals_total", "counter",
                   "New subjects refused because the in-process store was full of live state; "
                   "their policy's on_store_failure decided them.",
                   stats.refusals);
  write_unlabelled(out, "sluice_memory_store_expirations_total", "counter",
                   "Subjects the in-process store dropped because their state had expired.",
                   stats.expirations);
}

void write_connection_metrics(std::string& out, const HttpServer::ConnectionStats& stats) {
  write_unlabelled(out, "sluice_http_connections", "gauge", "HTTP connections open now.",
                   stats.open);
  write_unlabelled(out, "sluice_http_connections_evicted_total", "counter",
                   "Idle HTTP connections closed to admit a new one at max_connections or "
                   "max_connections_per_peer.",
                   stats.evicted);
  write_unlabelled(out, "sluice_http_connections_refused_total", "counter",
                   "New HTTP connections closed at a cap because no connection was idle.",
                   stats.refused);
  write_unlabelled(out, "sluice_http_tls_handshake_failures_total", "counter",
                   "TLS handshakes refused (protocol, certificate, plain HTTP on the HTTPS "
                   "port), broken off, or past tls_handshake_timeout.",
                   stats.tls_handshake_failures);
  write_unlabelled(out, "sluice_access_log_dropped_total", "counter",
                   "Access-log lines dropped because stderr did not keep up (8 MiB were waiting).",
                   stats.access_log_dropped);
  write_unlabelled(out, "sluice_http_buffered_body_bytes", "gauge",
                   "Request-body bytes held in memory against max_buffered_body_bytes.",
                   stats.buffered_body_bytes);
  write_unlabelled(out, "sluice_http_body_budget_refusals_total", "counter",
                   "Request bodies refused (503) because max_buffered_body_bytes was held.",
                   stats.body_budget_refusals);
}

}  // namespace sluice::http
