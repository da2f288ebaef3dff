#include "sluice/service/limiter.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/core/rendezvous.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/defence_fields.h"
#include "sluice/service/rollout.h"
#include "sluice/service/split_budget.h"

namespace sluice::service {
namespace {

Status no_such_policy(std::string_view policy, std::string_view app) {
  return not_found("no such policy for this app: policy \"" + std::string(policy) +
                   "\" does not exist or does not list app \"" + std::string(app) + "\"");
}

// The breaker's words for what the pipeline knows as flags.
CircuitBreaker::Outcome breaker_outcome(const StatusOr<Decision>& stored) {
  return !stored.ok() && is_store_outage(stored.status()) ? CircuitBreaker::Outcome::kOutage
                                                          : CircuitBreaker::Outcome::kAnswered;
}
CircuitBreaker::Admission breaker_admission(bool probe) {
  return probe ? CircuitBreaker::Admission::kProbe : CircuitBreaker::Admission::kPass;
}

// Acquire and peek: the operations that decide (failure modes, defences, waits, metrics).
bool deciding(Operation operation) {
  return operation == Operation::kAcquire || operation == Operation::kPeek;
}

bool lease_operation(Operation operation) {
  return operation == Operation::kRelease || operation == Operation::kRenew;
}

store::QuotaOperation quota_operation(Operation operation) {
  switch (operation) {
    case Operation::kRefund:
      return store::QuotaOperation::kRefund;
    case Operation::kReserve:
      return store::QuotaOperation::kReserve;
    case Operation::kSettle:
      return store::QuotaOperation::kSettle;
    default:
      return store::QuotaOperation::kCharge;
  }
}

// A lease operation's answer as a decision: allowed when the lease was live.
StatusOr<Decision> lease_decision(const StatusOr<bool>& live) {
  SLUICE_RETURN_IF_ERROR(live.status());
  return Decision{.verdict = {.allowed = *live}};
}

// The answer for a descriptor that nothing limits (Envoy: OK, no current limit).
Decided not_limited() { return {.decision = Decision{.verdict = {.allowed = true}}}; }

// The answer for a descriptor that reached an `unlimited` path: allowed, counted nowhere, with
// the policy, so the front end can tell it from an unmatched one (envoyproxy/ratelimit does).
Decided unlimited(std::shared_ptr<const policy::Policy> policy) {
  Decision decision{.verdict = {.allowed = true}, .policy = policy->name, .mode = policy->mode};
  return {.decision = std::move(decision), .policy = std::move(policy)};
}

// Whether `policy` (a request's) needs no store: an `unlimited` descriptor path.
bool is_unlimited(const std::shared_ptr<const policy::Policy>& policy) {
  return policy && policy->descriptors && policy->descriptors->unlimited;
}

Status not_decided() {
  return Status(StatusCode::kAborted, "not decided: another request of the batch is invalid");
}

}  // namespace

// One request on its way through the pipeline: resolved, then asked of the store once, or again
// after each wait.
struct Limiter::Attempt {
  DecisionRequest request;  // its subject, cost and operation as resolved
  std::shared_ptr<const policy::Policy> policy;
  Done done;
  bool blocking = false;  // block_on's: its caller waits on its own thread
  bool reserved = false;  // holds `claim`'s places among max_pending until answered
  PendingBound::Claim claim;
  Micros started = 0;     // steady clock
  Micros wait_until = 0;  // steady clock: no retry is scheduled past it
  Micros asked_at = 0;    // steady clock: when the store was last asked
  bool probe = false;     // the last store call is the circuit breaker's half-open probe
  bool by_batch = false;  // the last store call went through token leases
  // The deadline race of the store call in flight: its answer and its deadline each try to
  // close call `open_call` (numbered by `calls`, which only the asking thread writes); the first
  // wins. A late answer of an earlier call (the deadline came first, then a retry) finds another
  // number open and is dropped.
  std::uint32_t calls = 0;
  std::atomic<std::uint32_t> open_call{0};
  TimerQueue::Handle deadline;

  bool close(std::uint32_t call) { return open_call.compare_exchange_strong(call, 0); }
};

// A decide_all in flight: the last answer delivers them all.
struct Limiter::Batch {
  std::vector<std::optional<Decided>> answers;
  std::atomic<std::size_t> left;
  BatchDone done;

  void deliver(std::size_t index, Decided answer) {
    answers[index].emplace(std::move(answer));
    if (left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::vector<Decided> all;
    all.reserve(answers.size());
    for (auto& one : answers) all.push_back(*std::move(one));
    done(std::move(all));
  }
};

Limiter::Limiter(store::DecisionPort& store, store::DecisionPort* local, LimiterOptions options)
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

TokenBatches& Limiter::token_batches() {
  std::call_once(leases_started_,
                 [this] { batches_ = std::make_unique<TokenBatches>(store_, timers()); });
  return *batches_;
}

TokenBatchStats Limiter::token_batch_stats() const {
  return batches_ ? batches_->stats() : TokenBatchStats{};
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

bool is_overloaded(const Status& status) { return status.detail() == StatusDetail::kOverloaded; }

std::optional<Status> Limiter::reserve(const PendingBound::Claim& claim) {
  if (!bounded_) return std::nullopt;
  const std::optional<PendingRefusal> refused = pending_bound_.take(claim);
  if (!refused) return std::nullopt;
  metrics_.record_overloaded(claim.count);
  return pending_refused(*refused, pending_bound_.bounds());
}

Status Limiter::resolve(Attempt& attempt) const {
  DecisionRequest& request = attempt.request;
  if (request.wait < 0) return invalid_argument("wait: must not be negative");
  if (request.store_timeout < 0) return invalid_argument("store_timeout: must not be negative");
  if (request.operation == Operation::kPeek) request.cost = 0;
  if (request.held) {
    attempt.policy = std::move(request.held);  // read nowhere after resolution
    return {};
  }
  if (!request.descriptor) {
    SLUICE_ASSIGN_OR_RETURN(attempt.policy, find(request.policy, request.app));
    return {};
  }
  if (options_.policies == nullptr) {
    return Status(StatusCode::kFailedPrecondition, "limiter: no policy lookup configured");
  }
  const DescriptorTarget& descriptor = *request.descriptor;
  std::optional<policy::DescriptorMatch> match =
      options_.policies->descriptors()->match(request.app, descriptor.entries);
  if (!match) return {};  // not limited
  if (match->policy->limits.empty()) {
    // Answered without the store (unlimited()), or not limited when it has no limits otherwise.
    if (match->policy->descriptors->unlimited) attempt.policy = std::move(match->policy);
    return {};
  }
  if (match->subject.size() > kMaxSubjectBytes) {
    return invalid_argument("entries: the values make a subject over " +
                            std::to_string(kMaxSubjectBytes) + " bytes");
  }
  attempt.policy = std::move(match->policy);
  request.subject = std::move(match->subject);
  // A policy that charges (descriptors.charge) takes the cost reported after the work.
  if (attempt.policy->descriptors->charge) {
    request.operation = Operation::kCharge;
    return {};
  }
  if (descriptor.limit_override && attempt.policy->descriptors->allow_override) {
    SLUICE_RETURN_IF_ERROR(descriptor.limit_override->limit.status());
    auto overridden = std::make_shared<policy::Policy>(*attempt.policy);
    overridden->limits = {*descriptor.limit_override->limit};
    attempt.policy = std::move(overridden);
    request.subject += descriptor.limit_override->subject_suffix;
  }
  return {};
}

std::optional<Status> Limiter::take_places(Attempt& attempt) {
  // Lease operations free or extend what a decision holds: they take no place.
  if (!bounded_ || lease_operation(attempt.request.operation)) return std::nullopt;
  const bool waiting = attempt.request.wait > 0;
  attempt.claim = {.client = std::move(attempt.request.client),
                   .policy = waiting ? attempt.policy->name : std::string(),
                   .count = 1,
                   .waiting = waiting};
  if (std::optional<Status> refused = reserve(attempt.claim)) return refused;
  attempt.reserved = true;
  return std::nullopt;
}

void Limiter::decide(DecisionRequest request, Done done) {
  start(std::move(request), std::move(done), false);
}

Decided Limiter::block_on(DecisionRequest request) {
  // A lone caller spins for an answer that comes from the store's I/O thread soon (waiter.h); one
  // that asked to wait for room, or whose store answers in this process, sleeps at once.
  if (request.wait == 0 && store_.answers_in_process()) {
    // Answered before start returns: no store call leaves the process and no wait parks it.
    std::optional<Decided> answered;
    start(
        std::move(request), [&answered](Decided decided) { answered.emplace(std::move(decided)); },
        true);
    return *std::move(answered);
  }
  const Micros spin = request.wait == 0 ? options_.blocking_spin : 0;
  auto rendezvous = std::make_shared<Rendezvous<Decided>>();
  start(
      std::move(request),
      [rendezvous](Decided decided) { rendezvous->deliver(std::move(decided)); }, true);
  return rendezvous->wait(spin);
}

void Limiter::start(DecisionRequest request, Done done, bool blocking) {
  auto attempt = std::make_shared<Attempt>();
  attempt->request = std::move(request);
  attempt->blocking = blocking;
  if (Status status = resolve(*attempt); !status.ok()) return done({.decision = status});
  if (!attempt->policy) return done(not_limited());
  if (is_unlimited(attempt->policy)) return done(unlimited(attempt->policy));
  if (std::optional<Status> refused = take_places(*attempt)) {
    return done({.decision = *std::move(refused), .policy = attempt->policy});
  }
  attempt->done = std::move(done);
  run(attempt);
}

void Limiter::decide_all(std::vector<DecisionRequest> requests, BatchDone done, BatchRule rule) {
  const std::size_t size = requests.size();
  if (size == 0) return done({});
  std::vector<std::shared_ptr<Attempt>> attempts(size);
  std::vector<Status> unresolved(size);
  bool any_unresolved = false;
  for (std::size_t i = 0; i < size; ++i) {
    attempts[i] = std::make_shared<Attempt>();
    attempts[i]->request = std::move(requests[i]);
    unresolved[i] = resolve(*attempts[i]);
    any_unresolved = any_unresolved || !unresolved[i].ok();
  }
  if (any_unresolved && rule == BatchRule::kResolutionAllOrNone) {
    std::vector<Decided> answers;
    answers.reserve(size);
    for (const Status& status : unresolved) {
      answers.push_back({.decision = status.ok() ? not_decided() : status});
    }
    return done(std::move(answers));
  }
  if (rule == BatchRule::kResolutionAllOrNone) drop_replaced(attempts);
  // All places or none: a batch refused in part would be answered in part.
  for (std::size_t i = 0; i < size && rule == BatchRule::kPlacesAllOrNone; ++i) {
    if (!unresolved[i].ok() || !attempts[i]->policy) continue;
    std::optional<Status> refused = take_places(*attempts[i]);
    if (!refused) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (attempts[j]->reserved) unreserve(attempts[j]->claim);
    }
    // The places of the whole batch count as refused, as they did against the total alone.
    if (size > 1) metrics_.record_overloaded(size - 1);
    return done(std::vector<Decided>(size, Decided{.decision = *refused}));
  }
  auto batch = std::make_shared<Batch>();
  batch->answers.resize(size);
  batch->left.store(size);
  batch->done = std::move(done);
  for (std::size_t i = 0; i < size; ++i) {
    if (!unresolved[i].ok()) {
      batch->deliver(i, {.decision = std::move(unresolved[i])});
    } else if (!attempts[i]->policy) {
      batch->deliver(i, not_limited());
    } else if (is_unlimited(attempts[i]->policy)) {
      batch->deliver(i, unlimited(attempts[i]->policy));
    } else if (std::optional<Status> refused = rule == BatchRule::kResolutionAllOrNone
                                                   ? take_places(*attempts[i])
                                                   : std::nullopt) {
      batch->deliver(i, {.decision = *std::move(refused), .policy = attempts[i]->policy});
    } else {
      attempts[i]->done = [batch, i](Decided answer) { batch->deliver(i, std::move(answer)); };
      run(attempts[i]);
    }
  }
}

void Limiter::drop_replaced(const std::vector<std::shared_ptr<Attempt>>& attempts) {
  std::vector<std::string_view> replaced;
  for (const auto& attempt : attempts) {
    if (!attempt->policy || !attempt->policy->descriptors) continue;
    for (const std::string& name : attempt->policy->descriptors->replaces) replaced.push_back(name);
  }
  if (replaced.empty()) return;
  for (const auto& attempt : attempts) {
    if (!attempt->policy || !attempt->policy->descriptors) continue;
    const std::string& name = attempt->policy->descriptors->limit_name;
    if (!name.empty() && std::find(replaced.begin(), replaced.end(), name) != replaced.end()) {
      attempt->policy = nullptr;  // not limited in this call, nor counted
    }
  }
}

void Limiter::run(const std::shared_ptr<Attempt>& attempt) {
  DecisionRequest& request = attempt->request;
  const policy::Policy& policy = *attempt->policy;
  attempt->started = steady_.now();
  attempt->wait_until = attempt->started + request.wait;
  if (lease_operation(request.operation)) {
    if (!policy.admits_app(request.app)) {
      return answer(*attempt, no_such_policy(policy.name, request.app));
    }
    return ask_store(attempt);
  }
  if (std::optional<StatusOr<Decision>> early =
          decide_without_store(policy, request.app, request.cost)) {
    return answer(*attempt, *std::move(early));
  }
  if (request.operation == Operation::kReserve) request.reservation = store::new_unique_id();
  ask_store(attempt);
}

void Limiter::submit(const Attempt& attempt, store::DecisionPort::Done done) {
  const DecisionRequest& request = attempt.request;
  const policy::Policy& policy = *attempt.policy;
  store::SubjectRef ref{.policy = policy.name, .limits = policy.limits, .subject = request.subject};
  switch (request.operation) {
    case Operation::kAcquire:
    case Operation::kPeek:
      if (attempt.by_batch) {
        return token_batches().acquire(policy, request.subject, request.cost, std::move(done));
      }
      ref.penalty = policy.penalty ? &*policy.penalty : nullptr;
      return store_.acquire(ref, request.cost, std::move(done));
    case Operation::kRelease:
    case Operation::kRenew: {
      auto as_decision = [done = std::move(done)](const StatusOr<bool>& live) {
        done(lease_decision(live));
      };
      return store_.lease(ref,
                          request.operation == Operation::kRelease ? store::LeaseOperation::kRelease
                                                                   : store::LeaseOperation::kRenew,
                          request.lease, std::move(as_decision));
    }
    case Operation::kCharge:
    case Operation::kRefund:
    case Operation::kReserve:
    case Operation::kSettle:
      break;
  }
  store_.apply_quota(ref,
                     {.operation = quota_operation(request.operation),
                      .cost = request.cost,
                      .max_debt = policy.max_debt,
                      .reservation = request.reservation,
                      .reservation_ttl = request.reservation_ttl},
                     std::move(done));
}

void Limiter::ask_store(const std::shared_ptr<Attempt>& attempt) {
  const DecisionRequest& request = attempt->request;
  const bool decides = deciding(request.operation);
  attempt->by_batch = decides && batched(*attempt->policy, request.cost);
  if (attempt->by_batch) {
    if (std::optional<Decision> spent =
            token_batches().try_spend(*attempt->policy, request.subject, request.cost)) {
      return on_stored(attempt, *std::move(spent));
    }
  }
  if (store_.answers_in_process()) {
    // Answered before submit returns (Store::answers_in_process), so the caller's `attempt`
    // outlives the callback: a reference keeps the callback small enough to need no allocation.
    return submit(*attempt, [this, &attempt](StatusOr<Decision> stored) {
      on_stored(attempt, std::move(stored));
    });
  }
  if (decides) {
    if (std::optional<StatusOr<Decision>> defended =
            answer_from_defences(*attempt->policy, request.subject, request.cost, attempt->probe)) {
      return on_stored(attempt, *std::move(defended));
    }
  }
  attempt->asked_at = steady_.now();
  // A caller that blocks anyway, with no wait and no bound of its own, waits on the store's own
  // call (its timeout bounds it): the cheapest path for a thread per caller, with no timer.
  if (attempt->blocking && request.wait == 0 && request.store_timeout == 0) {
    return submit(*attempt, [this, attempt](StatusOr<Decision> stored) {
      on_store_answer(attempt, std::move(stored));
    });
  }
  // The deadline race, the one place it is written: the store's answer and the timer each try
  // to close the call; the first wins.
  const std::uint32_t call = ++attempt->calls;
  attempt->open_call.store(call);
  const Micros timeout = request.store_timeout > 0 ? request.store_timeout : options_.store_timeout;
  attempt->deadline = timers().after(timeout, [this, attempt, call, timeout] {
    if (!attempt->close(call)) return;
    on_store_answer(attempt, deadline_exceeded("store: no answer within " +
                                               std::to_string(timeout / kMicrosPerMilli) + " ms"));
  });
  submit(*attempt, [this, attempt, call](StatusOr<Decision> stored) {
    if (!attempt->close(call)) return;  // the deadline came first
    timers().cancel(attempt->deadline);
    on_store_answer(attempt, std::move(stored));
  });
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
  const DecisionRequest& request = attempt->request;
  if (attempt->by_batch) {
    // A lease's take may answer requests that waited for a take sent before they were asked:
    // its retry point is not theirs, so the over-limit cache (exact only from the asking
    // instant) keeps out of it; the breaker still counts the outcome.
    breaker_.record(breaker_outcome(stored), breaker_admission(attempt->probe), steady_.now());
  } else if (deciding(request.operation)) {
    observe_store(*attempt->policy, request.subject, request.cost, stored, attempt->asked_at,
                  attempt->probe);
  }
  on_stored(attempt, std::move(stored));
}

void Limiter::on_stored(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored) {
  const DecisionRequest& request = attempt->request;
  if (!deciding(request.operation)) {
    return answer(*attempt, finish_operation(*attempt, std::move(stored)));
  }
  StatusOr<Decision> decision =
      finish(*attempt->policy, request.subject, request.cost, std::move(stored));
  // Waiting helps only when the same request can succeed within the wait: answer at once
  // otherwise (never-grantable costs, retry points past the wait).
  if (decision.ok() && !decision->verdict.allowed && decision->verdict.retry_after &&
      steady_.now() + *decision->verdict.retry_after <= attempt->wait_until) {
    timers().after(*decision->verdict.retry_after, [this, attempt] { ask_store(attempt); });
    return;
  }
  answer(*attempt, std::move(decision));
}

void Limiter::answer(Attempt& attempt, StatusOr<Decision> decision) {
  if (decision.ok() && deciding(attempt.request.operation)) {
    count(attempt.request, *attempt.policy, *decision, attempt.started);
  }
  if (attempt.reserved) {
    attempt.reserved = false;
    unreserve(attempt.claim);
  }
  const Done done = std::move(attempt.done);
  done({.decision = std::move(decision), .policy = attempt.policy});
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

StatusOr<Decision> Limiter::finish_operation(const Attempt& attempt, StatusOr<Decision> stored) {
  if (!stored.ok()) {
    if (is_store_failure(stored.status())) count_store_error(stored.status());
    return stored.status();
  }
  const DecisionRequest& request = attempt.request;
  const policy::Policy& policy = *attempt.policy;
  Decision decision = *std::move(stored);
  decision.policy = policy.name;
  decision.mode = policy.mode;
  if (lease_operation(request.operation)) return decision;  // no mode: it frees or extends
  // A refund or a settlement may give units back: a cached denial would no longer be exact.
  if (request.operation == Operation::kRefund || request.operation == Operation::kSettle) {
    over_limit_cache_.forget(policy.name, request.subject);
  }
  metrics_.record_quota(policy.name, static_cast<int>(quota_operation(request.operation)),
                        decision.verdict.allowed, request.cost);
  if (request.operation == Operation::kReserve && decision.verdict.allowed) {
    decision.reservation = request.reservation;
  }
  apply_mode(policy, request.subject, decision);
  return decision;
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
