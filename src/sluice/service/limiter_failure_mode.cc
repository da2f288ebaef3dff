// The Limiter's answers when the store fails (limiter.h): the policy's failure mode decides
// (fail_open, fail_closed, local, split), and the store error is counted once.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/service/limiter.h"
#include "sluice/service/rollout.h"
#include "sluice/service/split_budget.h"

namespace sluice::service {

StatusOr<Decision> Limiter::finish(const policy::Policy& policy, std::string_view subject,
                                   std::int64_t cost, StatusOr<Decision> stored) {
  Decision decision{.policy = policy.name, .mode = policy.mode};
  if (stored.ok()) {
    decision.verdict = stored->verdict;
    decision.limit_index = stored->limit_index;
    decision.lease = std::move(stored->lease);
    if (policy.on_store_failure == policy::FailureMode::kSplit && local_ != nullptr) {
      last_seen_.record(policy.name, subject, decision, steady_.now());
    }
  } else if (is_store_failure(stored.status())) {
    count_store_error(stored.status());
    decision = degrade(policy, subject, cost);
  } else {
    return stored.status();
  }
  apply_mode(policy, subject, decision);  // staged rollout and shadow mode
  return decision;
}

void Limiter::count_store_error(const Status& status) {
  if (is_circuit_open(status)) return;  // no store call was made
  const bool refusal = is_store_refusal(status);
  metrics_.record_store_error(refusal);
  if (refusal && options_.on_store_refusal) options_.on_store_refusal(status);
}

Decision Limiter::degrade(const policy::Policy& policy, std::string_view subject,
                          std::int64_t cost) {
  Decision decision{.policy = policy.name, .mode = policy.mode, .degraded = true};
  // The catalogue's nominal size: a degraded decision reports the `limit` the store's would.
  decision.verdict.limit = algorithm::nominal_size(policy.limits.front());
  switch (policy.on_store_failure) {
    case policy::FailureMode::kFailClosed:
      decision.verdict.retry_after = options_.fail_closed_retry_after;
      return decision;
    case policy::FailureMode::kLocal:
    case policy::FailureMode::kSplit: {
      if (local_ == nullptr) break;
      const double fraction = policy.on_store_failure == policy::FailureMode::kSplit
                                  ? split_fraction(options_.live_nodes, options_.local_fraction)
                                  : options_.local_fraction;
      std::vector<algorithm::Limit> scaled;
      for (const auto& limit : policy.limits) scaled.push_back(scale_limit(limit, fraction));
      const store::SubjectRef ref{.policy = policy.name, .limits = scaled, .subject = subject};
      if (policy.on_store_failure == policy::FailureMode::kSplit) {
        seed_split_share(ref, fraction);
      }
      StatusOr<Decision> local = store::acquire_now(*local_, ref, cost);
      if (!local.ok()) break;
      decision.verdict = local->verdict;
      decision.limit_index = local->limit_index;
      decision.lease = std::move(local->lease);
      return decision;
    }
    case policy::FailureMode::kFailOpen:
      break;
  }
  decision.verdict.allowed = true;
  return decision;
}

void Limiter::seed_split_share(const store::SubjectRef& ref, double fraction) {
  std::optional<SeenUsage> seen = last_seen_.take(ref.policy, ref.subject, steady_.now());
  if (!seen || seen->limit_index >= ref.limits.size()) return;
  // This node's share of what the deployment had used, at most its whole share (a charge that
  // does not fit would charge nothing). Charged to every limit: conservative for the others.
  const std::int64_t share = std::min(seed_share(seen->used, fraction),
                                      algorithm::nominal_size(ref.limits[seen->limit_index]));
  // Best effort: a concurrency limit cannot be charged, and then nothing is seeded.
  (void)store::apply_quota_now(*local_, ref,
                               {.operation = store::QuotaOperation::kCharge, .cost = share});
}

}  // namespace sluice::service
