#include "sluice/service/limiter.h"

#include <optional>
#include <string>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/service/scale.h"

namespace sluice::service {
namespace {

Status no_such_policy(const policy::Policy& policy, std::string_view app) {
  return not_found("no such policy for this app: policy \"" + policy.name +
                   "\" does not list app \"" + std::string(app) + "\"");
}

// The nominal size of a limit, for decisions made without the store.
std::int64_t nominal_limit(const algorithm::Limit& limit) {
  return std::visit(
      [](const auto& p) -> std::int64_t {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, algorithm::TokenBucket>) return p.capacity;
        if constexpr (std::is_same_v<P, algorithm::Gcra>) return p.burst + 1;
        if constexpr (std::is_same_v<P, algorithm::LeakyBucket>) return 1;
        if constexpr (requires { p.limit; }) return p.limit;
        return 0;
      },
      limit);
}

}  // namespace

bool is_store_failure(const Status& status) {
  switch (status.code()) {
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
    case StatusCode::kInternal:
    case StatusCode::kUnauthenticated:  // the store's credentials, not the caller's
    case StatusCode::kPermissionDenied:
      return true;
    default:
      return false;
  }
}

Limiter::Limiter(store::Store& store, store::Store* local, LimiterOptions options)
    : store_(store), local_(local), options_(options) {}

StatusOr<Decision> Limiter::try_acquire(const policy::Policy& policy, std::string_view app,
                                        std::string_view subject, std::int64_t cost) {
  if (std::optional<StatusOr<Decision>> early = decide_without_store(policy, app, cost)) {
    return *std::move(early);
  }
  const store::SubjectRef ref{.policy = policy.name, .limits = policy.limits, .subject = subject};
  return finish(policy, subject, cost, store_.acquire(ref, cost));
}

void Limiter::try_acquire_async(const policy::Policy& policy, std::string_view app,
                                std::string_view subject, std::int64_t cost,
                                DecisionCallback done) {
  if (std::optional<StatusOr<Decision>> early = decide_without_store(policy, app, cost)) {
    done(*std::move(early));
    return;
  }
  const store::SubjectRef ref{.policy = policy.name, .limits = policy.limits, .subject = subject};
  store_.acquire_async(ref, cost,
                       [this, &policy, subject = std::string(subject), cost,
                        done = std::move(done)](StatusOr<store::StoreDecision> stored) {
                         done(finish(policy, subject, cost, std::move(stored)));
                       });
}

std::optional<StatusOr<Decision>> Limiter::decide_without_store(const policy::Policy& policy,
                                                                std::string_view app,
                                                                std::int64_t cost) {
  if (!policy.admits_app(app)) return StatusOr<Decision>(no_such_policy(policy, app));
  if (Status status = algorithm::validate_cost(cost); !status.ok()) {
    return StatusOr<Decision>(status);
  }
  if (policy.enabled) return std::nullopt;
  ++allowed_;
  return Decision{.verdict = {.allowed = true}, .policy = policy.name, .mode = policy.mode};
}

StatusOr<Decision> Limiter::finish(const policy::Policy& policy, std::string_view subject,
                                   std::int64_t cost, StatusOr<store::StoreDecision> stored) {
  Decision decision{.policy = policy.name, .mode = policy.mode};
  if (stored.ok()) {
    decision.verdict = stored->verdict.verdict;
    decision.limit_index = stored->verdict.limit_index;
    decision.lease = std::move(stored->lease);
  } else if (is_store_failure(stored.status())) {
    ++store_errors_;
    decision = degrade(policy, subject, cost);
  } else {
    return stored.status();
  }
  if (!decision.verdict.allowed && policy.mode == policy::Mode::kShadow) {
    decision.verdict.allowed = true;
    decision.shadow_denied = true;
    ++shadow_denied_;
  }
  ++(decision.verdict.allowed ? allowed_ : denied_);
  return decision;
}

Decision Limiter::degrade(const policy::Policy& policy, std::string_view subject,
                          std::int64_t cost) {
  ++degraded_;
  Decision decision{.policy = policy.name, .mode = policy.mode, .degraded = true};
  decision.verdict.limit = nominal_limit(policy.limits.front());
  switch (policy.on_store_failure) {
    case policy::FailureMode::kFailClosed:
      decision.verdict.retry_after = options_.fail_closed_retry_after;
      return decision;
    case policy::FailureMode::kLocal: {
      if (local_ == nullptr) break;
      std::vector<algorithm::Limit> scaled;
      for (const auto& limit : policy.limits) {
        scaled.push_back(scale_limit(limit, options_.local_fraction));
      }
      const store::SubjectRef ref{.policy = policy.name, .limits = scaled, .subject = subject};
      StatusOr<store::StoreDecision> local = local_->acquire(ref, cost);
      if (!local.ok()) break;
      decision.verdict = local->verdict.verdict;
      decision.limit_index = local->verdict.limit_index;
      decision.lease = std::move(local->lease);
      return decision;
    }
    case policy::FailureMode::kFailOpen:
      break;
  }
  decision.verdict.allowed = true;
  return decision;
}

StatusOr<bool> Limiter::release(const policy::Policy& policy, std::string_view app,
                                std::string_view subject, std::string_view lease) {
  if (!policy.admits_app(app)) return no_such_policy(policy, app);
  return store_.release({.policy = policy.name, .limits = policy.limits, .subject = subject},
                        lease);
}

StatusOr<bool> Limiter::renew(const policy::Policy& policy, std::string_view app,
                              std::string_view subject, std::string_view lease) {
  if (!policy.admits_app(app)) return no_such_policy(policy, app);
  return store_.renew({.policy = policy.name, .limits = policy.limits, .subject = subject}, lease);
}

LimiterStats Limiter::stats() const {
  return {.allowed = allowed_.load(),
          .denied = denied_.load(),
          .shadow_denied = shadow_denied_.load(),
          .degraded = degraded_.load(),
          .store_errors = store_errors_.load()};
}

}  // namespace sluice::service
