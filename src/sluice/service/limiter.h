// Limiter: the one asynchronous decision pipeline every front end calls (DESIGN.md §5
// "sluice::Limiter"): HTTP, gRPC, the library, the CLI and the benchmarks. One entry, decide():
// a DecisionRequest {app, target, operation, subject, cost, wait, store_timeout, client} goes in;
// one Decided (the decision or an error, and the policy snapshot that made it) comes back
// through a callback. block_on() is decide for callers that block; decide_all() a batch.
// The pipeline owns what every front end would otherwise repeat:
//   - resolution, once: lookup by name in the PolicyLookup snapshot, descriptor matching for
//     Envoy, limit overrides; and validation;
//   - the app check (a policy that does not list the app is "no such policy");
//   - server-side waiting on a timer, with no thread parked (retry at retry_after while the
//     answer can still come within the wait);
//   - a deadline on every store call that leaves the process: a store that has not answered by
//     then is treated as unreachable;
//   - shadow mode (always allow, report would-be denials) and failure modes (fail_open,
//     fail_closed, or local: an in-process store granting a fraction of each limit);
//   - lease release and renewal, and the quota operations (charge, refund, reserve, settle);
//   - the defences in front of a store whose calls leave the process (docs/defences.md): the
//     over-limit cache and the circuit breaker, and the staged rollout of mode enforce;
//   - the decision metrics (decision_metrics.h), one set for every front end;
//   - the bound on decisions in flight and its shares per client and policy (pending_bound.h).
// Front ends only translate their protocol and never block an I/O thread. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/timer_queue.h"
#include "sluice/core/waiter.h"
#include "sluice/policy/descriptors.h"
#include "sluice/policy/policy.h"
#include "sluice/service/circuit_breaker.h"
#include "sluice/service/decision.h"
#include "sluice/service/decision_metrics.h"
#include "sluice/service/last_seen_usage.h"
#include "sluice/service/over_limit_cache.h"
#include "sluice/service/pending_bound.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/service/store_failure.h"
#include "sluice/service/token_batches.h"
#include "sluice/store/store.h"

namespace sluice::service {

struct DecisionRequest;

// Sees each answered decision (LimiterOptions::on_decision): the request as resolved (its policy
// name, app, subject and cost) and the decision. Runs on the thread that answers; must not block.
using DecisionObserver = std::function<void(const DecisionRequest&, const Decision&)>;

struct LimiterOptions {
  // Failure mode `local`: the share of each limit this node grants alone (1/N for N nodes).
  double local_fraction = 1.0;
  // Failure mode `fail_closed`: the retry_after suggested with the denial.
  Micros fail_closed_retry_after = kMicrosPerSecond;
  // A store call that leaves the process and has no answer after this long is decided by the
  // policy's failure mode (a request may ask for less). > 0.
  Micros store_timeout = kMicrosPerSecond;
  // block_on on a store outside the process, with no wait: how long a caller blocked
  // alone in the process watches for its answer before it sleeps (waiter.h); 0: never.
  Micros blocking_spin = kDefaultBlockingSpin;
  // Where decide() finds policies by name and matches descriptors. Null: only requests with a
  // held policy work.
  const PolicyLookup* policies = nullptr;
  // Called for each store call refused for the server's own credentials or permissions
  // (is_store_refusal): a configuration to fix, which no waiting mends, so worth a loud log.
  // The policy's failure mode still decides. Called on the store's threads; must not block.
  std::function<void(const Status&)> on_store_refusal;
  // Deadlines and waits, and the clock that times them. Null: the limiter runs a TimerQueue of
  // its own on the steady clock, started on first need.
  TimerQueue* timers = nullptr;
  // Decisions in flight at most: asked of the store and not answered yet, or waiting for a
  // retry (wait); quota operations count too. Beyond it decide and decide_all answer at once
  // with overloaded() (a batch all or nothing), so a saturated
  // store costs neither unbounded memory nor unbounded latency. 0: no bound — the default, so
  // embedders (the library, sluice bench) keep getting failure-mode answers; `sluice serve` sets
  // max_pending_decisions (10 000).
  std::size_t max_pending = 0;
  // Shares of the places (pending_bound.h; issue 32 M6), so one client address or one policy
  // cannot take them all: decisions from one DecisionRequest::client; decisions asked with a wait
  // (parked for up to their wait), and of those from one client and on one policy. 0: no such
  // share here (`sluice serve` makes each half of the bound it divides: with_default_shares).
  std::size_t max_pending_per_client = 0;
  std::size_t max_waiting = 0;
  std::size_t max_waiting_per_client = 0;
  std::size_t max_waiting_per_policy = 0;
  // The defences (docs/defences.md), for a store whose calls leave the process. The local
  // over-limit cache: the most subjects it holds as denied (0: off); which policies use it:
  // policy::uses_over_limit_cache. A hit or a refusal of the open breaker answers before
  // acquire returns.
  std::size_t over_limit_cache_entries = 100'000;
  CircuitBreakerOptions circuit_breaker;
  // Failure mode `split`: the live sluice nodes sharing the store (the count the node heartbeat
  // last read, store/redis/node_heartbeat.h); the node then grants 1/live of each limit. Null,
  // or an answer of 0: split decides as local with local_fraction.
  std::function<std::size_t()> live_nodes;
  // Called for each acquire and peek answered with a decision (not errors, lease releases and
  // renewals, or quota operations), after it is counted and before `done` runs: `sluice serve`'s
  // recorder (app/recording.h), kept out of service so that service does not depend on it. Null:
  // nothing is called (the only cost is that check).
  DecisionObserver on_decision;
};

struct LimiterStats {
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t shadow_denied = 0;   // allowed only because the policy is in shadow mode
  std::uint64_t degraded = 0;        // decided by the failure mode
  std::uint64_t store_errors = 0;    // store calls that failed or passed their deadline
  std::uint64_t store_refusals = 0;  // of those, refused for credentials or permissions
  std::uint64_t overloaded = 0;      // requests refused at max_pending
  std::size_t pending = 0;           // decisions in flight now
};

// The answer to a decision request beyond LimiterOptions::max_pending: Unavailable, so HTTP says
// 503 and gRPC UNAVAILABLE; front ends add their retry hint. (Beyond one of its shares the answer
// is pending_refused's, which is_overloaded() recognises too.)
Status overloaded(std::size_t max_pending);
// Whether `status` is overloaded()'s answer.
bool is_overloaded(const Status& status);

// What a decision request asks the pipeline to do with its subject.
enum class Operation : std::uint8_t {
  kAcquire,  // take `cost` units (0 peeks), waiting up to `wait` for them
  kPeek,     // what an acquire would answer now, taking nothing (cost 0)
  kRelease,  // free concurrency lease `lease`: allowed when a live lease was freed
  kRenew,    // extend lease `lease` by its lease_ttl: allowed when it was live
  kCharge,   // quotas (docs/quotas.md): charge `cost` after the work, into debt to max_debt
  kRefund,   // give `cost` units back
  kReserve,  // charge the estimate `cost` and record a reservation for `reservation_ttl`
  kSettle,   // end reservation `reservation` with the actual cost `cost`
};

// Each operation's name, written once: its HTTP route's verb (/v1/charge, /v1/leases/{id}/renew),
// the CLI's subcommand and the quota metric's label. A peek is an acquire of cost 0 on the wire.
inline constexpr std::array<std::string_view, 8> kOperationNames = {
    "acquire", "acquire", "release", "renew", "charge", "refund", "reserve", "settle"};
constexpr std::string_view operation_name(Operation operation) {
  return kOperationNames[static_cast<std::size_t>(operation)];
}

// The operation of a store quota operation (charge, refund, reserve, settle).
constexpr Operation operation_of(store::QuotaOperation operation) {
  switch (operation) {
    case store::QuotaOperation::kRefund:
      return Operation::kRefund;
    case store::QuotaOperation::kReserve:
      return Operation::kReserve;
    case store::QuotaOperation::kSettle:
      return Operation::kSettle;
    case store::QuotaOperation::kCharge:
      break;
  }
  return Operation::kCharge;
}

// An Envoy RLS descriptor (docs/envoy.md) to match in the descriptor trees of domain
// DecisionRequest::app. The entries are read before decide() returns (resolution happens there),
// so they may view the caller's message.
struct DescriptorTarget {
  std::vector<policy::RequestEntry> entries;
  // The descriptor's RateLimitOverride, honoured when the matched policy allows overrides: the
  // limit it asks for (or why it is invalid: the call's error then), and what is appended to the
  // matched subject so the override never shares state with the policy's own limits.
  struct Override {
    StatusOr<algorithm::Limit> limit;
    std::string subject_suffix;
  };
  std::optional<Override> limit_override;
};

// One decision request, as every front end hands it over. Its target is, in order of precedence:
// a policy the caller holds (`held`), an Envoy descriptor (`descriptor`), or a policy name
// (`policy`, looked up in LimiterOptions::policies). Resolution happens once, in decide().
struct DecisionRequest {
  std::string app;     // the calling app; for a descriptor, the Envoy domain
  std::string policy;  // a name, looked up in LimiterOptions::policies
  std::shared_ptr<const policy::Policy> held;  // a policy the caller holds: no lookup
  std::optional<DescriptorTarget> descriptor;  // an Envoy descriptor; it makes the subject
  Operation operation = Operation::kAcquire;
  std::string subject;
  std::int64_t cost = 1;  // acquire: units to take; reserve: the estimate; settle: the actual
  // How long the caller accepts to wait for an allowed answer (acquire; 0: answer at once). A
  // denial is retried at its retry_after while that falls within the wait; a request that cannot
  // succeed within it is answered (denied) at once.
  Micros wait = 0;
  // Bound on each store call (0: LimiterOptions::store_timeout).
  Micros store_timeout = 0;
  // Who asks (the HTTP or gRPC peer address): its decisions in flight count against its share of
  // max_pending (LimiterOptions::max_pending_per_client). Empty: counted in the totals only.
  std::string client;
  std::string lease;        // release, renew: the lease's id (Decision::lease)
  std::string reservation;  // settle: the id reserve answered (Decision::reservation)
  // Reserve: how long the reservation may be settled (store.h: 1 µs to 7 days).
  Micros reservation_ttl = 60 * kMicrosPerSecond;
};

// What decide() answers: the decision (or the request's error) and the policy snapshot that made
// it, so that front ends never look the policy up again (headers, RLS statuses).
struct Decided {
  StatusOr<Decision> decision;
  // The policy that decided: the snapshot found by name, the caller's own, or a descriptor's
  // (with an override's limit). Null when resolution failed, and for a descriptor that matched
  // no policy with limits (then the decision allows, counted nowhere: Envoy's "not limited").
  std::shared_ptr<const policy::Policy> policy;
};

class Limiter {
 public:
  // `store` holds the shared state; `local` serves failure mode `local` (nullptr: such policies
  // fail open). Both must outlive the limiter; they may be the same object.
  Limiter(store::DecisionPort& store, store::DecisionPort* local, LimiterOptions options = {});
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  using Done = std::function<void(Decided)>;

  // The one entry of the pipeline: resolves `request`'s target, then decides its operation.
  // `done` runs exactly once: before decide returns when no store call must leave the process
  // (bad input, no such policy, a disabled policy, the in-memory store, a defence's answer), else
  // on the store's I/O thread or the timer thread, where it must not block.
  // Errors: NotFound "no such policy for this app" (unknown policy, or one that does not list the
  // app); InvalidArgument naming the field; Unavailable overloaded() beyond max_pending (release
  // and renew take no place). Acquire and peek: store failures and missed deadlines become
  // degraded decisions (the policy's on_store_failure), never errors. Release and renew: the
  // decision allows when a live lease was released / renewed; store failures are errors (there is
  // nothing to degrade to). Charge, refund, reserve, settle (store.h apply_quota): the decision
  // carries the signed balance; a charge refused for the policy's max_debt is allowed = false; a
  // disabled policy (or one without limits) answers allowed with no balance and changes nothing;
  // shadow mode reports a refused charge as allowed with shadow_denied (nothing is charged);
  // FailedPrecondition for a policy with a concurrency limit; store failures and missed deadlines
  // are errors (Unavailable / DeadlineExceeded): a failure mode cannot know a debt, and a caller
  // can retry a charge. Only acquire and peek count in the decision metrics.
  void decide(DecisionRequest request, Done done);

  // How decide_all admits its requests.
  enum class BatchRule : std::uint8_t {
    // A batch of one caller's requests (HTTP): one that fails to resolve (unknown policy, bad
    // input) is answered with its error while the others are decided; the places among
    // max_pending are taken all or none (a batch refused in part would be answered in part).
    kPlacesAllOrNone,
    // An Envoy call's descriptors: when one fails to resolve none is decided (it keeps its
    // error, every other request gets Aborted), as the call fails whole; each takes its own
    // place, as separate decisions do (a refused one answers overloaded()).
    kResolutionAllOrNone,
  };
  // Decides every request, sharing store calls where the store can: every request is resolved
  // and admitted (`rule`) before any is submitted, so a store that batches (Redis) carries them
  // in few calls. `done` gets the answers in request order, once, as decide's. A batch is not a
  // loop over decide because of those all-or-none steps.
  using BatchDone = std::function<void(std::vector<Decided>)>;
  void decide_all(std::vector<DecisionRequest> requests, BatchDone done,
                  BatchRule rule = BatchRule::kPlacesAllOrNone);

  // decide for callers that block: returns the answer. Must not run on a thread that answers
  // store calls (a store callback). A caller alone in the process watches for an answer from a
  // store outside it for LimiterOptions::blocking_spin before it sleeps (waiter.h); without a
  // wait or a store_timeout of its own, its store calls are bounded by the store's own timeout
  // (no timer: the cheapest path for a thread per caller).
  Decided block_on(DecisionRequest request);

  // Drops the over-limit cache's denial of `subject` (an admin reset gave its units back).
  void forget_denial(std::string_view policy, std::string_view subject) {
    over_limit_cache_.forget(policy, subject);
  }
  const OverLimitCache& over_limit_cache() const { return over_limit_cache_; }
  BreakerState circuit_breaker_state() const { return breaker_.state(); }

  LimiterStats stats() const;
  // Token leasing (policies with lease_tokens, token_batches.h): takes, units, local decisions.
  TokenBatchStats token_batch_stats() const;
  const DecisionMetrics& metrics() const { return metrics_; }

 private:
  struct Attempt;
  struct Batch;

  // decide() for callers on their own thread (`blocking`: block_on's).
  void start(DecisionRequest request, Done done, bool blocking);
  // Resolves `attempt`'s target: sets its policy (and, for a descriptor, its subject and
  // operation). Ok with no policy: a descriptor that nothing limits.
  Status resolve(Attempt& attempt) const;
  // One Envoy call's resolved descriptors: those whose path's limit_name another's `replaces`
  // names lose their policy (not limited in this call), as envoyproxy/ratelimit's `replaces`.
  static void drop_replaced(const std::vector<std::shared_ptr<Attempt>>& attempts);
  // Takes the places `attempt` holds among max_pending while in flight (none for lease
  // operations); the overloaded() answer when they do not fit.
  std::optional<Status> take_places(Attempt& attempt);
  // Runs a resolved attempt whose places are taken: answers without the store, or asks it.
  void run(const std::shared_ptr<Attempt>& attempt);
  // The policy named `name` if it admits `app`, else NotFound.
  StatusOr<std::shared_ptr<const policy::Policy>> find(std::string_view name,
                                                       std::string_view app) const;
  // Asks the store for `attempt`'s operation, under a deadline when the call leaves the process.
  void ask_store(const std::shared_ptr<Attempt>& attempt);
  // Sends `attempt`'s operation to the store (or token leases); `done` gets the store's answer.
  void submit(const Attempt& attempt, store::DecisionPort::Done done);
  // The answer the defences give without the store: a cached denial, or a refusal of the open
  // circuit breaker (decided by the failure mode). Sets `probe` for the half-open probe.
  std::optional<StatusOr<Decision>> answer_from_defences(const policy::Policy& policy,
                                                         std::string_view subject,
                                                         std::int64_t cost, bool& probe);
  // Tells the breaker and the cache what the store answered to a call sent at `asked_at`.
  void observe_store(const policy::Policy& policy, std::string_view subject, std::int64_t cost,
                     const StatusOr<Decision>& stored, Micros asked_at, bool probe);
  // The store's answer (or its deadline) for `attempt`: observed, then retried after a wait,
  // or answered.
  void on_store_answer(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored);
  void on_stored(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored);
  // Counts an answered decision of `request`'s `policy` (asked at `started`) in the stats and
  // metrics, and shows it to on_decision (limiter_count.cc).
  void count(const DecisionRequest& request, const policy::Policy& policy, const Decision& decision,
             Micros started);
  // Counts and delivers `attempt`'s answer.
  void answer(Attempt& attempt, StatusOr<Decision> decision);
  // The answer when the store need not be asked (refused, or the policy is disabled).
  std::optional<StatusOr<Decision>> decide_without_store(const policy::Policy& policy,
                                                         std::string_view app, std::int64_t cost);
  // The decision from the store's answer: degraded on a store failure, shadow mode applied.
  StatusOr<Decision> finish(const policy::Policy& policy, std::string_view subject,
                            std::int64_t cost, StatusOr<Decision> stored);
  // The same for a lease or quota operation, whose store failures are errors.
  StatusOr<Decision> finish_operation(const Attempt& attempt, StatusOr<Decision> stored);
  Decision degrade(const policy::Policy& policy, std::string_view subject, std::int64_t cost);
  // Failure mode split: charges the local store this node's share of the subject's usage last
  // seen in the shared store (once per outage; last_seen_usage.h).
  void seed_split_share(const store::SubjectRef& ref, double fraction);
  void count_store_error(const Status& status);
  // Takes `claim`'s places among max_pending and its shares, all or none; the overloaded()
  // answer naming the bound when they do not fit (counted).
  std::optional<Status> reserve(const PendingBound::Claim& claim);
  void unreserve(const PendingBound::Claim& claim) {
    if (bounded_) pending_bound_.give_back(claim);
  }
  TimerQueue& timers();
  // The token leases of policies with lease_tokens, made on first need.
  TokenBatches& token_batches();
  // Whether a decision of `cost` units goes through token leases: a policy with lease_tokens, a
  // store that leaves the process, and units to spend (a peek, cost 0, asks the store).
  bool batched(const policy::Policy& policy, std::int64_t cost) const {
    return policy.lease_tokens > 0 && cost > 0 && !store_.answers_in_process();
  }

  store::DecisionPort& store_;
  store::DecisionPort* local_;
  LimiterOptions options_;
  const Clock& steady_;  // the timers' clock: waits, deadlines and durations
  std::once_flag timers_started_;
  std::unique_ptr<TimerQueue> own_timers_;
  std::once_flag leases_started_;
  std::unique_ptr<TokenBatches> batches_;  // after own_timers_: destroyed first
  LastSeenUsage last_seen_;                // failure mode split: each subject's usage, to seed
  DecisionMetrics metrics_;
  bool bounded_ = false;             // any bound of pending_bound_ is set
  PendingBound pending_bound_;       // after metrics_: counts into its pending gauge
  OverLimitCache over_limit_cache_;  // after metrics_: both count into it
  CircuitBreaker breaker_;
  std::atomic<std::uint64_t> allowed_{0};
  std::atomic<std::uint64_t> denied_{0};
  std::atomic<std::uint64_t> shadow_denied_{0};
  std::atomic<std::uint64_t> degraded_{0};
};

}  // namespace sluice::service
