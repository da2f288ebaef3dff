#include "sluice/service/decision_metrics.h"

#include <cstdio>
#include <mutex>

#include "sluice/service/decision.h"

namespace sluice::service {
namespace {

std::string seconds(Micros micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", static_cast<double>(micros) / 1e6);
  return text;
}

// `{labels}` or "" when there are none.
std::string braces(std::string_view labels) {
  if (labels.empty()) return {};
  return "{" + std::string(labels) + "}";
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

void write_help(std::string& out, std::string_view name, std::string_view type,
                std::string_view text) {
  out.append("# HELP ").append(name).append(" ").append(text).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void Histogram::observe(Micros value) {
  std::size_t i = 0;
  while (i < kBounds.size() && value > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(value, std::memory_order_relaxed);
}

void Histogram::write(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < kBounds.size() ? seconds(kBounds[i]) : "+Inf";
    out.append(name).append("_bucket{").append(prefix).append("le=\"").append(le).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum").append(braces(labels)).append(" ");
  out.append(seconds(sum_micros_.load())).append("\n");
  out.append(name).append("_count").append(braces(labels)).append(" ");
  out.append(std::to_string(cumulative)).append("\n");
}

DecisionMetrics::PolicyCounters& DecisionMetrics::policy(std::string_view name) {
  {
    std::shared_lock lock(mutex_);
    if (auto it = policies_.find(name); it != policies_.end()) return *it->second;
  }
  std::unique_lock lock(mutex_);
  auto [it, inserted] = policies_.try_emplace(std::string(name), nullptr);
  if (inserted) it->second = std::make_unique<PolicyCounters>();
  return *it->second;
}

void DecisionMetrics::record(const Decision& decision, Micros duration) {
  PolicyCounters& counters = policy(decision.policy);
  (decision.verdict.allowed ? counters.allowed : counters.denied)
      .fetch_add(1, std::memory_order_relaxed);
  if (decision.shadow_denied) counters.shadow_denied.fetch_add(1, std::memory_order_relaxed);
  if (decision.degraded) counters.degraded.fetch_add(1, std::memory_order_relaxed);
  if (decision.verdict.blocked_until) counters.blocked.fetch_add(1, std::memory_order_relaxed);
  counters.duration.observe(duration);
}

void DecisionMetrics::record_quota(std::string_view policy_name, int operation, bool applied,
                                   std::int64_t units) {
  if (operation < 0 || operation > 3) return;
  PolicyCounters& counters = policy(policy_name);
  const auto i = static_cast<std::size_t>(operation);
  (applied ? counters.quota_applied[i] : counters.quota_refused[i])
      .fetch_add(1, std::memory_order_relaxed);
  if (applied && units > 0) {
    counters.quota_units[i].fetch_add(static_cast<std::uint64_t>(units), std::memory_order_relaxed);
  }
}

std::map<std::string, DecisionMetrics::Counts, std::less<>> DecisionMetrics::counts() const {
  std::shared_lock lock(mutex_);
  std::map<std::string, Counts, std::less<>> out;
  for (const auto& [policy, c] : policies_) {
    out[policy] = {.allowed = c->allowed.load(std::memory_order_relaxed),
                   .denied = c->denied.load(std::memory_order_relaxed),
                   .shadow_denied = c->shadow_denied.load(std::memory_order_relaxed),
                   .degraded = c->degraded.load(std::memory_order_relaxed),
                   .blocked = c->blocked.load(std::memory_order_relaxed)};
  }
  return out;
}

void DecisionMetrics::write(std::string& out) const {
  std::shared_lock lock(mutex_);
  const auto per_policy = [&](std::string_view name, std::string_view suffix, auto value) {
    for (const auto& [policy, counters] : policies_) {
      out.append(name).append("{policy=\"").append(escape_label(policy)).append("\"");
      out.append(suffix).append("} ").append(std::to_string(value(*counters))).append("\n");
    }
  };
  write_help(out, "sluice_decisions_total", "counter", "Decisions by policy and outcome.");
  per_policy("sluice_decisions_total", ",outcome=\"allowed\"",
             [](const PolicyCounters& c) { return c.allowed.load(); });
  per_policy("sluice_decisions_total", ",outcome=\"denied\"",
             [](const PolicyCounters& c) { return c.denied.load(); });
  write_help(out, "sluice_shadow_denials_total", "counter",
             "Requests a shadow-mode policy would have denied (they were allowed).");
  per_policy("sluice_shadow_denials_total", "",
             [](const PolicyCounters& c) { return c.shadow_denied.load(); });
  write_help(out, "sluice_degraded_decisions_total", "counter",
             "Decisions made by the policy's on_store_failure mode because the store was "
             "unreachable.");
  per_policy("sluice_degraded_decisions_total", "",
             [](const PolicyCounters& c) { return c.degraded.load(); });
  write_help(out, "sluice_penalty_blocked_total", "counter",
             "Decisions denied because the subject was in the policy's penalty box (or would "
             "have been, in shadow mode), the denial that starts a block included.");
  per_policy("sluice_penalty_blocked_total", "",
             [](const PolicyCounters& c) { return c.blocked.load(); });
  static constexpr std::array<std::string_view, 4> kQuotaOperations = {"charge", "refund",
                                                                       "reserve", "settle"};
  write_help(out, "sluice_quota_operations_total", "counter",
             "Quota operations (charge, refund, reserve, settle) by outcome: applied, or refused "
             "(a charge beyond the policy's max_debt). Not counted as decisions.");
  for (std::size_t i = 0; i < kQuotaOperations.size(); ++i) {
    const std::string operation = ",operation=\"" + std::string(kQuotaOperations[i]) + "\"";
    per_policy("sluice_quota_operations_total", operation + ",outcome=\"applied\"",
               [i](const PolicyCounters& c) { return c.quota_applied[i].load(); });
    per_policy("sluice_quota_operations_total", operation + ",outcome=\"refused\"",
               [i](const PolicyCounters& c) { return c.quota_refused[i].load(); });
  }
  write_help(out, "sluice_quota_units_total", "counter",
             "Cost units named by applied quota operations (charged, refunded, reserved, or a "
             "settle's actual cost).");
  for (std::size_t i = 0; i < kQuotaOperations.size(); ++i) {
    per_policy("sluice_quota_units_total",
               ",operation=\"" + std::string(kQuotaOperations[i]) + "\"",
               [i](const PolicyCounters& c) { return c.quota_units[i].load(); });
  }
  write_help(out, "sluice_store_errors_total", "counter",
             "Store calls that failed or passed their deadline.");
  out += "sluice_store_errors_total " + std::to_string(store_errors()) + "\n";
  write_help(out, "sluice_store_refusals_total", "counter",
             "Store calls refused for the server's own credentials or permissions (NOAUTH, "
             "WRONGPASS, NOPERM): a configuration to fix, not an outage. Also counted in "
             "sluice_store_errors_total.");
  out += "sluice_store_refusals_total " + std::to_string(store_refusals()) + "\n";
  write_help(out, "sluice_decisions_pending", "gauge",
             "Decisions in flight: asked of the store and not answered, or waiting to retry.");
  out += "sluice_decisions_pending " + std::to_string(pending()) + "\n";
  write_help(out, "sluice_decisions_overloaded_total", "counter",
             "Decision requests refused at once because max_pending decisions were in flight "
             "(HTTP 503 with Retry-After, gRPC UNAVAILABLE).");
  out += "sluice_decisions_overloaded_total " + std::to_string(overloaded()) + "\n";
  write_help(out, "sluice_decision_duration_seconds", "histogram",
             "From a decision request reaching the limiter to its answer, waiting included.");
  for (const auto& [policy, counters] : policies_) {
    counters->duration.write(out, "sluice_decision_duration_seconds",
                             "policy=\"" + escape_label(policy) + "\"");
  }
  defences_.write(out);
}

}  // namespace sluice::service
