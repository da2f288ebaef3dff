#include "sluice/service/limiter.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/rendezvous.h"
#include "sluice/policy/defence_fields.h"
#include "sluice/service/rollout.h"
#include "sluice/service/split_budget.h"

namespace sluice::service {
namespace {

Status no_such_policy(std::string_view policy, std::string_view app) {
  return not_found("no such policy for this app: policy \"" + std::string(policy) +
                   "\" does not exist or does not list app \"" + std::string(app) + "\"");
}

// The nominal size of a limit, for decisions made without the store: the catalogue's, so a
// degraded decision reports the `limit` the store's decision would.
std::int64_t nominal_limit(const algorithm::Limit& limit) { return algorithm::nominal_size(limit); }

}  // namespace

bool is_store_outage(const Status& status) {
  return status.code() == StatusCode::kUnavailable ||
         status.code() == StatusCode::kDeadlineExceeded ||
         status.code() == StatusCode::kResourceExhausted;
}

namespace {

// The breaker's and the rollout counters' words for what the pipeline knows as flags.
CircuitBreaker::Outcome breaker_outcome(const StatusOr<Decision>& stored) {
  return !stored.ok() && is_store_outage(stored.status()) ? CircuitBreaker::Outcome::kOutage
                                                          : CircuitBreaker::Outcome::kAnswered;
}
CircuitBreaker::Admission breaker_admission(bool probe) {
  return probe ? CircuitBreaker::Admission::kProbe : CircuitBreaker::Admission::kPass;
}
DefenceMetrics::RolloutGroup rollout_group(const Decision& decision) {
  return decision.mode == policy::Mode::kEnforce ? DefenceMetrics::RolloutGroup::kEnforced
                                                 : DefenceMetrics::RolloutGroup::kShadowed;
}
DefenceMetrics::RolloutOutcome rollout_outcome(const Decision& decision) {
  if (decision.shadow_denied) return DefenceMetrics::RolloutOutcome::kShadowDenied;
  return decision.verdict.allowed ? DefenceMetrics::RolloutOutcome::kAllowed
                                  : DefenceMetrics::RolloutOutcome::kDenied;
}

}  // namespace

bool is_store_refusal(const Status& status) {
  return status.code() == StatusCode::kUnauthenticated ||
         status.code() == StatusCode::kPermissionDenied;
}

Status circuit_open() {
  return unavailable("circuit open: the store failed repeatedly; not asked until a probe answers");
}

bool is_circuit_open(const Status& status) {
  return status.code() == StatusCode::kUnavailable && status.message().starts_with("circuit open:");
}

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

// One decision on its way through the pipeline: looked up, then asked of the store once, or
// again after each wait.
struct Limiter::Attempt {
  AcquireRequest request;
  std::shared_ptr<const policy::Policy> looked_up;  // keeps `policy` alive when found by name
  const policy::Policy* policy = nullptr;
  DecisionCallback done;
  bool reserved = false;  // holds `claim`'s places among max_pending until answered
  PendingBound::Claim claim;
  Micros started = 0;     // steady clock
  Micros wait_until = 0;  // steady clock: no retry is scheduled past it
  Micros asked_at = 0;    // steady clock: when the store was last asked
  bool probe = false;     // the last store call is the circuit breaker's half-open probe
};

// One store call that leaves the process: its answer and its deadline race, and the first wins.
struct Limiter::StoreCall {
  std::atomic<bool> settled{false};
  TimerQueue::Handle deadline;
};

Limiter::Limiter(store::Store& store, store::Store* local, LimiterOptions options)
    : store_(store),
      local_(local),
      options_(options),
      steady_(options.timers != nullptr ? options.timers->clock() : SteadyClock::instance()),
      bounded_(options.max_pending != 0 || options.max_pending_per_client != 0 ||
               options.max_waiting != 0 || options.max_waiting_per_client != 0 ||
               options.max_waiting_per_policy != 0),
      pending_bound_({.total = options.max_pending,
                      .per_client = options.max_pending_per_client,
                      .waiting = options.max_waiting,
                      .waiting_per_client = options.max_waiting_per_client,
                      .waiting_per_policy = options.max_waiting_per_policy},
                     metrics_.pending()),
      over_limit_cache_(options.over_limit_cache_entries, metrics_.defences()),
      breaker_(options.circuit_breaker, metrics_.defences()) {
  if (options_.store_timeout <= 0) options_.store_timeout = kMicrosPerSecond;
}

Limiter::~Limiter() = default;

TimerQueue& Limiter::timers() {
  if (options_.timers != nullptr) return *options_.timers;
  std::call_once(timers_started_, [this] { own_timers_ = std::make_unique<TimerQueue>(); });
  return *own_timers_;
}

TokenLeases& Limiter::token_leases() {
  std::call_once(leases_started_,
                 [this] { leases_ = std::make_unique<TokenLeases>(store_, timers()); });
  return *leases_;
}

TokenLeaseStats Limiter::token_lease_stats() const {
  return leases_ ? leases_->stats() : TokenLeaseStats{};
}

StatusOr<std::shared_ptr<const policy::Policy>> Limiter::find(std::string_view name,
                                                              std::string_view app) const {
  if (options_.policies == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "limiter: no policy lookup configured");
  }
  std::shared_ptr<const policy::Policy> policy = options_.policies->find(name);
  if (!policy || !policy->admits_app(app)) return no_such_policy(name, app);
  return policy;
}

Status overloaded(std::size_t max_pending) {
  return pending_refused(PendingRefusal::kTotal, {.total = max_pending});
}

bool is_overloaded(const Status& status) {
  return status.code() == StatusCode::kUnavailable && status.message().starts_with("overloaded: ");
}

std::optional<Status> Limiter::reserve(const PendingBound::Claim& claim) {
  if (!bounded_) return std::nullopt;
  const std::optional<PendingRefusal> refused = pending_bound_.take(claim);
  if (!refused) return std::nullopt;
  metrics_.record_overloaded(claim.count);
  return pending_refused(*refused, pending_bound_.bounds());
}

PendingBound::Claim Limiter::claim_of(const AcquireRequest& request) {
  return {
      .client = request.client, .policy = request.policy, .count = 1, .waiting = request.wait > 0};
}

void Limiter::acquire(AcquireRequest request, DecisionCallback done) {
  PendingBound::Claim claim = claim_of(request);
  if (std::optional<Status> refused = reserve(claim)) return done(*std::move(refused));
  acquire_reserved(std::move(request), std::move(claim), std::move(done));
}

void Limiter::acquire_reserved(AcquireRequest request, PendingBound::Claim claim,
                               DecisionCallback done) {
  std::vector<algorithm::FieldError> errors;
  if (request.wait < 0) errors.push_back({"wait", "must not be negative"});
  if (request.store_timeout < 0) errors.push_back({"store_timeout", "must not be negative"});
  if (!errors.empty()) {
    unreserve(claim);
    return done(invalid_argument(errors.front().field + ": " + errors.front().message));
  }
  StatusOr<std::shared_ptr<const policy::Policy>> policy = find(request.policy, request.app);
  if (!policy.ok()) {
    unreserve(claim);
    return done(policy.status());
  }
  auto attempt = std::make_shared<Attempt>();
  attempt->reserved = bounded_;
  attempt->claim = std::move(claim);
  attempt->started = steady_.now();
  attempt->wait_until = attempt->started + request.wait;
  attempt->policy = policy->get();
  attempt->looked_up = std::move(*policy);
  attempt->request = std::move(request);
  attempt->done = std::move(done);
  if (std::optional<StatusOr<Decision>> early =
          decide_without_store(*attempt->policy, attempt->request.app, attempt->request.cost)) {
    return answer(*attempt, *std::move(early));
  }
  ask_store(attempt);
}

void Limiter::try_acquire_async(const policy::Policy& policy, std::string_view app,
                                std::string_view subject, std::int64_t cost, DecisionCallback done,
                                Micros store_timeout) {
  PendingBound::Claim claim{.count = 1};
  if (std::optional<Status> refused = reserve(claim)) return done(*std::move(refused));
  auto attempt = std::make_shared<Attempt>();
  attempt->reserved = bounded_;
  attempt->claim = std::move(claim);
  attempt->started = steady_.now();
  attempt->wait_until = attempt->started;
  attempt->policy = &policy;
  attempt->request = {.app = std::string(app),
                      .subject = std::string(subject),
                      .cost = cost,
                      .store_timeout = store_timeout};
  attempt->done = std::move(done);
  if (std::optional<StatusOr<Decision>> early = decide_without_store(policy, app, cost)) {
    return answer(*attempt, *std::move(early));
  }
  ask_store(attempt);
}

StatusOr<Decision> Limiter::try_acquire(const policy::Policy& policy, std::string_view app,
                                        std::string_view subject, std::int64_t cost) {
  const Micros started = steady_.now();
  if (std::optional<StatusOr<Decision>> early = decide_without_store(policy, app, cost)) {
    if (early->ok()) ++allowed_;
    return *std::move(early);
  }
  if (leased(policy, cost)) {
    std::optional<Decision> spent = token_leases().try_spend(policy, subject, cost);
    if (!spent) {
      auto rendezvous = std::make_shared<Rendezvous<StatusOr<Decision>>>();
      try_acquire_async(policy, app, subject, cost, [rendezvous](StatusOr<Decision> decision) {
        rendezvous->deliver(std::move(decision));
      });
      return rendezvous->wait();
    }
    StatusOr<Decision> decision = finish(policy, subject, cost, *std::move(spent));
    ++allowed_;
    metrics_.record(*decision, steady_.now() - started);
    return decision;
  }
  // A caller that blocks anyway waits on the store's own call (its timeout bounds it): the
  // cheapest path for a thread per caller, with no timer and no hand-off.
  const store::SubjectRef ref{.policy = policy.name,
                              .limits = policy.limits,
                              .subject = subject,
                              .penalty = policy.penalty ? &*policy.penalty : nullptr};
  bool probe = false;
  const bool remote = !store_.answers_in_process();
  std::optional<StatusOr<Decision>> defended =
      remote ? answer_from_defences(policy, subject, cost, probe) : std::nullopt;
  StatusOr<Decision> stored = defended ? *std::move(defended) : store_.acquire(ref, cost);
  if (!defended && remote) observe_store(policy, subject, cost, stored, started, probe);
  StatusOr<Decision> decision = finish(policy, subject, cost, std::move(stored));
  if (decision.ok()) count(policy, *decision, started);
  return decision;
}

StatusOr<Decision> Limiter::acquire_blocking(AcquireRequest request) {
  if (request.wait == 0 && request.store_timeout == 0) {
    StatusOr<std::shared_ptr<const policy::Policy>> policy = find(request.policy, request.app);
    if (!policy.ok()) return policy.status();
    return try_acquire(**policy, request.app, request.subject, request.cost);
  }
  // A lone caller spins for an answer that comes from the store's I/O thread soon (waiter.h); one
  // that asked to wait for room, or whose store answers in this process, sleeps at once.
  const Micros spin =
      request.wait == 0 && !store_.answers_in_process() ? options_.blocking_spin : 0;
  auto rendezvous = std::make_shared<Rendezvous<StatusOr<Decision>>>();
  acquire(std::move(request),
          [rendezvous](StatusOr<Decision> decision) { rendezvous->deliver(std::move(decision)); });
  return rendezvous->wait(spin);
}

void Limiter::acquire_all(std::vector<AcquireRequest> requests, BatchCallback done) {
  struct Batch {
    std::vector<std::optional<StatusOr<Decision>>> answers;
    std::atomic<std::size_t> left;
    BatchCallback done;
  };
  if (requests.empty()) return done({});
  // All places or none: a batch refused in part would be answered in part.
  std::vector<PendingBound::Claim> claims;
  claims.reserve(requests.size());
  for (const AcquireRequest& request : requests) {
    claims.push_back(claim_of(request));
    if (std::optional<Status> refused = reserve(claims.back())) {
      claims.pop_back();
      for (const PendingBound::Claim& taken : claims) unreserve(taken);
      // The places of the whole batch count as refused, as they did against the total alone.
      if (requests.size() > 1) metrics_.record_overloaded(requests.size() - 1);
      return done(std::vector<StatusOr<Decision>>(requests.size(), *refused));
    }
  }
  auto batch = std::make_shared<Batch>();
  batch->answers.resize(requests.size());
  batch->left.store(requests.size());
  batch->done = std::move(done);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    acquire_reserved(std::move(requests[i]), std::move(claims[i]),
                     [batch, i](StatusOr<Decision> decision) {
                       batch->answers[i].emplace(std::move(decision));
                       if (batch->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
                       std::vector<StatusOr<Decision>> answers;
                       answers.reserve(batch->answers.size());
                       for (auto& answer : batch->answers) answers.push_back(*std::move(answer));
                       batch->done(std::move(answers));
                     });
  }
}

void Limiter::ask_store(const std::shared_ptr<Attempt>& attempt) {
  const store::SubjectRef ref{
      .policy = attempt->policy->name,
      .limits = attempt->policy->limits,
      .subject = attempt->request.subject,
      .penalty = attempt->policy->penalty ? &*attempt->policy->penalty : nullptr};
  const bool by_lease = leased(*attempt->policy, attempt->request.cost);
  if (by_lease) {
    if (std::optional<Decision> spent = token_leases().try_spend(
            *attempt->policy, attempt->request.subject, attempt->request.cost)) {
      return on_stored(attempt, *std::move(spent));
    }
  }
  if (store_.answers_in_process()) {
    store_.acquire_async(ref, attempt->request.cost, [this, attempt](StatusOr<Decision> stored) {
      on_stored(attempt, std::move(stored));
    });
    return;
  }
  if (std::optional<StatusOr<Decision>> defended = answer_from_defences(
          *attempt->policy, attempt->request.subject, attempt->request.cost, attempt->probe)) {
    return on_stored(attempt, *std::move(defended));
  }
  attempt->asked_at = steady_.now();
  const Micros timeout =
      attempt->request.store_timeout > 0 ? attempt->request.store_timeout : options_.store_timeout;
  auto call = std::make_shared<StoreCall>();
  call->deadline = timers().after(timeout, [this, attempt, call, timeout] {
    if (call->settled.exchange(true)) return;
    on_store_answer(attempt, deadline_exceeded("store: no answer within " +
                                               std::to_string(timeout / kMicrosPerMilli) + " ms"));
  });
  auto on_answer = [this, attempt, call, by_lease](StatusOr<Decision> stored) {
    if (call->settled.exchange(true)) return;  // the deadline came first
    timers().cancel(call->deadline);
    if (by_lease) {
      // A lease's take may answer requests that waited for a take sent before they were asked:
      // its retry point is not theirs, so the over-limit cache (exact only from the asking
      // instant) keeps out of it; the breaker still counts the outcome.
      breaker_.record(breaker_outcome(stored), breaker_admission(attempt->probe), steady_.now());
      return on_stored(attempt, std::move(stored));
    }
    on_store_answer(attempt, std::move(stored));
  };
  if (by_lease) {
    token_leases().acquire(*attempt->policy, attempt->request.subject, attempt->request.cost,
                           std::move(on_answer));
  } else {
    store_.acquire_async(ref, attempt->request.cost, std::move(on_answer));
  }
}

std::optional<StatusOr<Decision>> Limiter::answer_from_defences(const policy::Policy& policy,
                                                                std::string_view subject,
                                                                std::int64_t cost, bool& probe) {
  probe = false;
  const Micros now = steady_.now();
  // The cache first: a known denial stays exact while the store is down, even under fail_open.
  if (policy::uses_over_limit_cache(policy)) {
    if (std::optional<Decision> cached = over_limit_cache_.find(policy, subject, cost, now)) {
      return StatusOr<Decision>(*std::move(cached));
    }
  }
  switch (breaker_.admit(now)) {
    case CircuitBreaker::Admission::kPass:
      return std::nullopt;
    case CircuitBreaker::Admission::kProbe:
      probe = true;
      return std::nullopt;
    case CircuitBreaker::Admission::kRefuse:
      break;
  }
  return StatusOr<Decision>(circuit_open());
}

void Limiter::observe_store(const policy::Policy& policy, std::string_view subject,
                            std::int64_t cost, const StatusOr<Decision>& stored, Micros asked_at,
                            bool probe) {
  const Micros now = steady_.now();
  breaker_.record(breaker_outcome(stored), breaker_admission(probe), now);
  if (stored.ok() && !stored->verdict.allowed && policy::uses_over_limit_cache(policy)) {
    over_limit_cache_.remember(policy, subject, cost, *stored, asked_at, now);
  }
}

void Limiter::on_store_answer(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored) {
  observe_store(*attempt->policy, attempt->request.subject, attempt->request.cost, stored,
                attempt->asked_at, attempt->probe);
  on_stored(attempt, std::move(stored));
}

void Limiter::on_stored(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored) {
  StatusOr<Decision> decision =
      finish(*attempt->policy, attempt->request.subject, attempt->request.cost, std::move(stored));
  // Waiting helps only when the same request can succeed within the wait: answer at once
  // otherwise (never-grantable costs, retry points past the wait).
  if (decision.ok() && !decision->verdict.allowed && decision->verdict.retry_after &&
      steady_.now() + *decision->verdict.retry_after <= attempt->wait_until) {
    timers().after(*decision->verdict.retry_after, [this, attempt] { ask_store(attempt); });
    return;
  }
  answer(*attempt, std::move(decision));
}

void Limiter::count(const policy::Policy& policy, const Decision& decision, Micros started) {
  if (policy.rollout) {
    metrics_.defences().record_rollout(policy.name, rollout_group(decision),
                                       rollout_outcome(decision));
  }
  ++(decision.verdict.allowed ? allowed_ : denied_);
  if (decision.shadow_denied) ++shadow_denied_;
  if (decision.degraded) ++degraded_;
  metrics_.record(decision, steady_.now() - started);
}

void Limiter::answer(Attempt& attempt, StatusOr<Decision> decision) {
  if (decision.ok()) count(*attempt.policy, *decision, attempt.started);
  if (attempt.reserved) {
    attempt.reserved = false;
    unreserve(attempt.claim);
  }
  const DecisionCallback done = std::move(attempt.done);
  done(std::move(decision));
}

std::optional<StatusOr<Decision>> Limiter::decide_without_store(const policy::Policy& policy,
                                                                std::string_view app,
                                                                std::int64_t cost) {
  if (!policy.admits_app(app)) return StatusOr<Decision>(no_such_policy(policy.name, app));
  if (Status status = algorithm::validate_cost(cost); !status.ok()) {
    return StatusOr<Decision>(status);
  }
  // A policy without limits (an `unlimited` descriptor node) never needs the store.
  if (policy.enabled && !policy.limits.empty()) return std::nullopt;
  return Decision{.verdict = {.allowed = true}, .policy = policy.name, .mode = policy.mode};
}

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
  decision.verdict.limit = nominal_limit(policy.limits.front());
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
      StatusOr<Decision> local = local_->acquire(ref, cost);
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
  const std::int64_t share =
      std::min(seed_share(seen->used, fraction), nominal_limit(ref.limits[seen->limit_index]));
  // Best effort: a concurrency limit cannot be charged, and then nothing is seeded.
  (void)local_->apply_quota(ref, {.operation = store::QuotaOperation::kCharge, .cost = share});
}

void Limiter::release(LeaseRequest request, LeaseCallback done) {
  lease_operation(std::move(request), true, std::move(done));
}

void Limiter::renew(LeaseRequest request, LeaseCallback done) {
  lease_operation(std::move(request), false, std::move(done));
}

void Limiter::lease_operation(LeaseRequest request, bool release, LeaseCallback done) {
  StatusOr<std::shared_ptr<const policy::Policy>> policy = find(request.policy, request.app);
  if (!policy.ok()) return done(policy.status());
  const store::SubjectRef ref{
      .policy = (*policy)->name, .limits = (*policy)->limits, .subject = request.subject};
  // The policy stays alive (and the ref valid) until the store answers.
  auto counted = [this, keep = *policy, done = std::move(done)](StatusOr<bool> result) {
    if (!result.ok() && is_store_failure(result.status())) count_store_error(result.status());
    done(std::move(result));
  };
  if (release) {
    store_.release_async(ref, request.lease, std::move(counted));
  } else {
    store_.renew_async(ref, request.lease, std::move(counted));
  }
}

StatusOr<bool> Limiter::release(const policy::Policy& policy, std::string_view app,
                                std::string_view subject, std::string_view lease) {
  if (!policy.admits_app(app)) return no_such_policy(policy.name, app);
  return store_.release({.policy = policy.name, .limits = policy.limits, .subject = subject},
                        lease);
}

StatusOr<bool> Limiter::renew(const policy::Policy& policy, std::string_view app,
                              std::string_view subject, std::string_view lease) {
  if (!policy.admits_app(app)) return no_such_policy(policy.name, app);
  return store_.renew({.policy = policy.name, .limits = policy.limits, .subject = subject}, lease);
}

void Limiter::apply_quota(QuotaCall call, DecisionCallback done) {
  // A charge or refund is a store call in flight like a decision: it holds a place among
  // max_pending until answered, so a batch of them cannot pass the bound (issue 32, L5), nor
  // one client's calls its share (M6).
  PendingBound::Claim claim{.client = call.client, .count = 1};
  if (std::optional<Status> refused = reserve(claim)) return done(*std::move(refused));
  done = [this, claim = std::move(claim), done = std::move(done)](StatusOr<Decision> answer) {
    unreserve(claim);
    done(std::move(answer));
  };
  if (call.store_timeout < 0) return done(invalid_argument("store_timeout: must not be negative"));
  StatusOr<std::shared_ptr<const policy::Policy>> found = find(call.policy, call.app);
  if (!found.ok()) return done(found.status());
  std::shared_ptr<const policy::Policy> policy = std::move(*found);
  if (std::optional<StatusOr<Decision>> early =
          decide_without_store(*policy, call.app, call.cost)) {
    return done(*std::move(early));
  }
  const store::SubjectRef ref{
      .policy = policy->name, .limits = policy->limits, .subject = call.subject};
  if (call.operation == store::QuotaOperation::kReserve) call.reservation = store::new_lease_id();
  const store::QuotaRequest request{.operation = call.operation,
                                    .cost = call.cost,
                                    .max_debt = policy->max_debt,
                                    .reservation = call.reservation,
                                    .reservation_ttl = call.reservation_ttl};
  const bool reserving = call.operation == store::QuotaOperation::kReserve;
  // The policy stays alive (and `ref` valid) until the store answers.
  // A refund or a settlement may give units back: a cached denial would no longer be exact.
  const bool gives_back = call.operation == store::QuotaOperation::kRefund ||
                          call.operation == store::QuotaOperation::kSettle;
  auto finish_quota = [this, policy, reserving, reservation = call.reservation, gives_back,
                       subject = call.subject, operation = static_cast<int>(call.operation),
                       cost = call.cost, done = std::move(done)](StatusOr<Decision> stored) {
    if (!stored.ok()) {
      if (is_store_failure(stored.status())) count_store_error(stored.status());
      return done(stored.status());
    }
    if (gives_back) over_limit_cache_.forget(policy->name, subject);
    Decision decision = *std::move(stored);
    metrics_.record_quota(policy->name, operation, decision.verdict.allowed, cost);
    decision.policy = policy->name;
    decision.mode = policy->mode;
    if (reserving && decision.verdict.allowed) decision.reservation = reservation;
    apply_mode(*policy, subject, decision);
    done(std::move(decision));
  };
  if (store_.answers_in_process()) return store_.apply_quota_async(ref, request, finish_quota);
  const Micros timeout = call.store_timeout > 0 ? call.store_timeout : options_.store_timeout;
  auto settled = std::make_shared<StoreCall>();
  auto shared_finish = std::make_shared<decltype(finish_quota)>(std::move(finish_quota));
  settled->deadline = timers().after(timeout, [settled, shared_finish, timeout] {
    if (settled->settled.exchange(true)) return;
    (*shared_finish)(deadline_exceeded("store: no answer within " +
                                       std::to_string(timeout / kMicrosPerMilli) + " ms"));
  });
  store_.apply_quota_async(ref, request, [this, settled, shared_finish](StatusOr<Decision> stored) {
    if (settled->settled.exchange(true)) return;  // deadline came first
    timers().cancel(settled->deadline);
    (*shared_finish)(std::move(stored));
  });
}

StatusOr<Decision> Limiter::apply_quota_blocking(QuotaCall call) {
  auto rendezvous = std::make_shared<Rendezvous<StatusOr<Decision>>>();
  apply_quota(std::move(call), [rendezvous](StatusOr<Decision> decision) {
    rendezvous->deliver(std::move(decision));
  });
  return rendezvous->wait();
}

LimiterStats Limiter::stats() const {
  return {.allowed = allowed_.load(),
          .denied = denied_.load(),
          .shadow_denied = shadow_denied_.load(),
          .degraded = degraded_.load(),
          .store_errors = metrics_.store_errors(),
          .store_refusals = metrics_.store_refusals(),
          .overloaded = metrics_.overloaded(),
          .pending = std::as_const(metrics_).pending()};
}

}  // namespace sluice::service
