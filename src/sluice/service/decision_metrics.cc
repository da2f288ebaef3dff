#include "sluice/service/decision_metrics.h"

#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/service/decision.h"
#include "sluice/service/limiter.h"
#include "sluice/store/store.h"

namespace sluice::service {
void Histogram::observe(Micros value) {
  std::size_t i = 0;
  while (i < kBounds.size() && value > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(value, std::memory_order_relaxed);
}

void Histogram::write(PrometheusText& text, std::string_view name,
                      std::span<const MetricLabel> labels) const {
  std::vector<MetricLabel> bucket_labels(labels.begin(), labels.end());
  bucket_labels.push_back({.name = "le", .value = ""});
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    const std::string le = i < kBounds.size() ? format_seconds(kBounds[i]) : "+Inf";
    bucket_labels.back().value = le;
    text.sample(bucket, bucket_labels, cumulative);
  }
  text.sample(std::string(name) + "_sum", labels, format_seconds(sum_micros_.load()));
  text.sample(std::string(name) + "_count", labels, cumulative);
}

DecisionMetrics::PolicyCounters& DecisionMetrics::policy(std::string_view name) {
  {
    ReaderLock lock(mutex_);
    if (auto it = policies_.find(name); it != policies_.end()) return *it->second;
  }
  WriterLock lock(mutex_);
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
  ReaderLock lock(mutex_);
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
  ReaderLock lock(mutex_);
  PrometheusText text(out);
  // Read under the lock held for this whole function (the analysis does not follow it into the
  // lambda).
  const auto* policies = &policies_;
  // One sample per policy, with `labels` after the policy's.
  const auto per_policy = [&](std::string_view name, std::initializer_list<MetricLabel> labels,
                              auto value) {
    std::vector<MetricLabel> all = {{.name = "policy", .value = ""}};
    all.insert(all.end(), labels.begin(), labels.end());
    for (const auto& [policy, counters] : *policies) {
      all.front().value = policy;
      text.sample(name, all, value(*counters));
    }
  };
  text.family("sluice_decisions_total", MetricType::kCounter, "Decisions by policy and outcome.");
  per_policy("sluice_decisions_total", {{"outcome", "allowed"}},
             [](const PolicyCounters& c) { return c.allowed.load(); });
  per_policy("sluice_decisions_total", {{"outcome", "denied"}},
             [](const PolicyCounters& c) { return c.denied.load(); });
  text.family("sluice_shadow_denials_total", MetricType::kCounter,
              "Requests a shadow-mode policy would have denied (they were allowed).");
  per_policy("sluice_shadow_denials_total", {},
             [](const PolicyCounters& c) { return c.shadow_denied.load(); });
  text.family("sluice_degraded_decisions_total", MetricType::kCounter,
              "Decisions made by the policy's on_store_failure mode because the store was "
              "unreachable.");
  per_policy("sluice_degraded_decisions_total", {},
             [](const PolicyCounters& c) { return c.degraded.load(); });
  text.family("sluice_penalty_blocked_total", MetricType::kCounter,
              "Decisions denied because the subject was in the policy's penalty box (or would "
              "have been, in shadow mode), the denial that starts a block included.");
  per_policy("sluice_penalty_blocked_total", {},
             [](const PolicyCounters& c) { return c.blocked.load(); });
  // Counter i is store::QuotaOperation i's (record_quota).
  constexpr std::size_t kQuotaCounters = std::tuple_size_v<decltype(PolicyCounters::quota_applied)>;
  const auto quota_label = [](std::size_t i) {
    return operation_name(operation_of(static_cast<store::QuotaOperation>(i)));
  };
  text.family("sluice_quota_operations_total", MetricType::kCounter,
              "Quota operations (charge, refund, reserve, settle) by outcome: applied, or refused "
              "(a charge beyond the policy's max_debt). Not counted as decisions.");
  for (std::size_t i = 0; i < kQuotaCounters; ++i) {
    const std::string_view operation = quota_label(i);
    per_policy("sluice_quota_operations_total", {{"operation", operation}, {"outcome", "applied"}},
               [i](const PolicyCounters& c) { return c.quota_applied[i].load(); });
    per_policy("sluice_quota_operations_total", {{"operation", operation}, {"outcome", "refused"}},
               [i](const PolicyCounters& c) { return c.quota_refused[i].load(); });
  }
  text.family("sluice_quota_units_total", MetricType::kCounter,
              "Cost units named by applied quota operations (charged, refunded, reserved, or a "
              "settle's actual cost).");
  for (std::size_t i = 0; i < kQuotaCounters; ++i) {
    const std::string_view operation = quota_label(i);
    per_policy("sluice_quota_units_total", {{"operation", operation}},
               [i](const PolicyCounters& c) { return c.quota_units[i].load(); });
  }
  text.single("sluice_store_errors_total", MetricType::kCounter,
              "Store calls that failed or passed their deadline.", store_errors());
  text.single("sluice_store_refusals_total", MetricType::kCounter,
              "Store calls refused for the server's own credentials or permissions (NOAUTH, "
              "WRONGPASS, NOPERM): a configuration to fix, not an outage. Also counted in "
              "sluice_store_errors_total.",
              store_refusals());
  text.single("sluice_decisions_pending", MetricType::kGauge,
              "Decisions in flight: asked of the store and not answered, or waiting to retry.",
              pending());
  text.single("sluice_decisions_overloaded_total", MetricType::kCounter,
              "Decision requests refused at once because max_pending decisions were in flight "
              "(HTTP 503 with Retry-After, gRPC UNAVAILABLE).",
              overloaded());
  text.family("sluice_decision_duration_seconds", MetricType::kHistogram,
              "From a decision request reaching the limiter to its answer, waiting included.");
  for (const auto& [policy, counters] : policies_) {
    const MetricLabel label{.name = "policy", .value = policy};
    counters->duration.write(text, "sluice_decision_duration_seconds", {&label, 1});
  }
  defences_.write(out);
}

}  // namespace sluice::service
