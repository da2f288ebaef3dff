#include "sluice/server/http/metrics.h"

#include <cstdio>
#include <mutex>

namespace sluice::http {
namespace {

std::string seconds(Micros micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", static_cast<double>(micros) / 1e6);
  return text;
}

void help(std::string& out, std::string_view name, std::string_view type, std::string_view text) {
  out.append("# HELP ").append(name).append(" ").append(text).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

std::string escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void Histogram::observe(Micros value) {
  std::size_t i = 0;
  while (i < kBounds.size() && value > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(value, std::memory_order_relaxed);
}

void Histogram::write(std::string& out, std::string_view name) const {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < kBounds.size() ? seconds(kBounds[i]) : "+Inf";
    out.append(name).append("_bucket{le=\"").append(le).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum ").append(seconds(sum_micros_.load())).append("\n");
  out.append(name).append("_count ").append(std::to_string(cumulative)).append("\n");
}

Metrics::PolicyCounters& Metrics::policy(std::string_view name) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = policies_.find(name); it != policies_.end()) return *it->second;
  }
  std::unique_lock lock(mutex_);
  auto [it, inserted] = policies_.try_emplace(std::string(name), nullptr);
  if (inserted) it->second = std::make_unique<PolicyCounters>();
  return *it->second;
}

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

void Metrics::record_decision(const service::Decision& decision) {
  PolicyCounters& counters = policy(decision.policy);
  (decision.verdict.allowed ? counters.allowed : counters.denied)
      .fetch_add(1, std::memory_order_relaxed);
  if (decision.shadow_denied) counters.shadow_denied.fetch_add(1, std::memory_order_relaxed);
  if (decision.degraded) counters.degraded.fetch_add(1, std::memory_order_relaxed);
}

void Metrics::record_http(std::string_view route, int status, Micros duration) {
  http_counter(route, status).fetch_add(1, std::memory_order_relaxed);
  http_duration_.observe(duration);
}

std::string Metrics::render(std::uint64_t extra_store_errors) const {
  std::string out;
  std::shared_lock lock(mutex_);
  help(out, "sluice_decisions_total", "counter", "Decisions by policy and outcome.");
  for (const auto& [name, c] : policies_) {
    const std::string label = escape_label(name);
    out += "sluice_decisions_total{policy=\"" + label + "\",outcome=\"allowed\"} " +
           std::to_string(c->allowed.load()) + "\n";
    out += "sluice_decisions_total{policy=\"" + label + "\",outcome=\"denied\"} " +
           std::to_string(c->denied.load()) + "\n";
  }
  help(out, "sluice_shadow_denials_total", "counter",
       "Requests a shadow-mode policy would have denied (they were allowed).");
  for (const auto& [name, c] : policies_) {
    out += "sluice_shadow_denials_total{policy=\"" + escape_label(name) + "\"} " +
           std::to_string(c->shadow_denied.load()) + "\n";
  }
  help(out, "sluice_degraded_decisions_total", "counter",
       "Decisions made by the policy's on_store_failure mode because the store was unreachable.");
  for (const auto& [name, c] : policies_) {
    out += "sluice_degraded_decisions_total{policy=\"" + escape_label(name) + "\"} " +
           std::to_string(c->degraded.load()) + "\n";
  }
  help(out, "sluice_store_errors_total", "counter", "Store calls that failed.");
  out += "sluice_store_errors_total " + std::to_string(store_errors_.load() + extra_store_errors) +
         "\n";
  help(out, "sluice_store_latency_seconds", "histogram",
       "Duration of decision calls, dominated by the store round trip.");
  store_latency_.write(out, "sluice_store_latency_seconds");
  help(out, "sluice_http_requests_total", "counter", "HTTP requests by route and status code.");
  for (const auto& [route, codes] : http_) {
    for (const auto& [code, count] : codes) {
      out += "sluice_http_requests_total{route=\"" + escape_label(route) + "\",code=\"" +
             std::to_string(code) + "\"} " + std::to_string(count->load()) + "\n";
    }
  }
  help(out, "sluice_http_request_duration_seconds", "histogram",
       "Time from a complete request to its response being handed to the socket.");
  http_duration_.write(out, "sluice_http_request_duration_seconds");
  return out;
}

}  // namespace sluice::http
