// Limiter: the one asynchronous decision pipeline every front end calls (DESIGN.md §5
// "sluice::Limiter"): HTTP today, gRPC and the library next. A request {app, policy name,
// subject, cost, wait, timeout} goes in; one Decision (or an error) comes back through a
// callback. The pipeline owns what every front end would otherwise repeat:
//   - policy lookup in the PolicyLookup snapshot, and validation (once);
//   - the app check (a policy that does not list the app is "no such policy");
//   - server-side waiting on a timer, with no thread parked (retry at retry_after while the
//     answer can still come within the wait);
//   - a deadline on every store call that leaves the process: a store that has not answered by
//     then is treated as unreachable;
//   - shadow mode (always allow, report would-be denials) and failure modes (fail_open,
//     fail_closed, or local: an in-process store granting a fraction of each limit);
//   - lease release and renewal;
//   - the defences in front of a store whose calls leave the process (docs/defences.md): the
//     over-limit cache and the circuit breaker, and the staged rollout of mode enforce;
//   - the decision metrics (decision_metrics.h), one set for every front end;
//   - the bound on decisions in flight and its shares per client and policy (pending_bound.h).
// Front ends only translate their protocol and never block an I/O thread. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/waiter.h"
#include "sluice/policy/policy.h"
#include "sluice/service/circuit_breaker.h"
#include "sluice/service/decision.h"
#include "sluice/service/decision_metrics.h"
#include "sluice/service/last_seen_usage.h"
#include "sluice/service/over_limit_cache.h"
#include "sluice/service/pending_bound.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/service/timer_queue.h"
#include "sluice/service/token_leases.h"
#include "sluice/store/store.h"

namespace sluice::service {

struct LimiterOptions {
  // Failure mode `local`: the share of each limit this node grants alone (1/N for N nodes).
  double local_fraction = 1.0;
  // Failure mode `fail_closed`: the retry_after suggested with the denial.
  Micros fail_closed_retry_after = kMicrosPerSecond;
  // A store call that leaves the process and has no answer after this long is decided by the
  // policy's failure mode (a request may ask for less). > 0.
  Micros store_timeout = kMicrosPerSecond;
  // acquire_blocking on a store outside the process, with no wait: how long a caller blocked
  // alone in the process watches for its answer before it sleeps (waiter.h); 0: never.
  Micros blocking_spin = kDefaultBlockingSpin;
  // Where acquire() finds policies by name. Null: only the Policy-taking calls work.
  const PolicyLookup* policies = nullptr;
  // Called for each store call refused for the server's own credentials or permissions
  // (is_store_refusal): a configuration to fix, which no waiting mends, so worth a loud log.
  // The policy's failure mode still decides. Called on the store's threads; must not block.
  std::function<void(const Status&)> on_store_refusal;
  // Deadlines and waits, and the clock that times them. Null: the limiter runs a TimerQueue of
  // its own on the steady clock, started on first need.
  TimerQueue* timers = nullptr;
  // Decisions in flight at most: asked of the store and not answered yet, or waiting for a
  // retry (wait); quota operations count too. Beyond it acquire, acquire_all, try_acquire_async
  // and apply_quota answer at once with overloaded() (a batch all or nothing), so a saturated
  // store costs neither unbounded memory nor unbounded latency. 0: no bound — the default, so
  // embedders (the library, sluice bench) keep getting failure-mode answers; `sluice serve` sets
  // max_pending_decisions (10 000).
  std::size_t max_pending = 0;
  // Shares of the places (pending_bound.h; issue 32 M6), so one client address or one policy
  // cannot take them all: decisions from one AcquireRequest::client; decisions asked with a wait
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

// One decision request, as every front end hands it over.
struct AcquireRequest {
  std::string app;
  std::string policy;  // a name, looked up in LimiterOptions::policies
  std::string subject;
  std::int64_t cost = 1;
  // How long the caller accepts to wait for an allowed answer (0: answer at once). A denial is
  // retried at its retry_after while that falls within the wait; a request that cannot succeed
  // within it is answered (denied) at once.
  Micros wait = 0;
  // Bound on each store call (0: LimiterOptions::store_timeout).
  Micros store_timeout = 0;
  // Who asks (the HTTP or gRPC peer address): its decisions in flight count against its share of
  // max_pending (LimiterOptions::max_pending_per_client). Empty: counted in the totals only.
  std::string client;
};

// A quota operation (docs/quotas.md): charge units after the work is done (into debt down to the
// policy's max_debt) or refund them, for one subject of a policy found by name.
struct QuotaCall {
  std::string app;
  std::string policy;
  std::string subject;
  store::QuotaOperation operation = store::QuotaOperation::kCharge;
  std::int64_t cost = 1;  // reserve: the estimate; settle: the actual cost
  // Settle: the id reserve answered (Decision::reservation). Reserve: empty (a new random id).
  std::string reservation;
  // Reserve: how long the reservation may be settled (store.h: 1 µs to 7 days).
  Micros reservation_ttl = 60 * kMicrosPerSecond;
  // Bound on the store call (0: LimiterOptions::store_timeout).
  Micros store_timeout = 0;
  // Who asks, as AcquireRequest::client: the call counts against its share of max_pending.
  std::string client;
};

// A lease operation's target.
struct LeaseRequest {
  std::string app;
  std::string policy;
  std::string subject;
  std::string lease;
};

class Limiter {
 public:
  // `store` holds the shared state; `local` serves failure mode `local` (nullptr: such policies
  // fail open). Both must outlive the limiter; they may be the same object.
  Limiter(store::Store& store, store::Store* local, LimiterOptions options = {});
  ~Limiter();
  Limiter(const Limiter&) = delete;
  Limiter& operator=(const Limiter&) = delete;

  using DecisionCallback = std::function<void(StatusOr<Decision>)>;

  // Decides `request`. `done` runs exactly once: before acquire returns when no store call must
  // leave the process (bad input, no such policy, a disabled policy, the in-memory store), else
  // on the store's I/O thread or the timer thread, where it must not block.
  // Errors: NotFound "no such policy for this app" (unknown policy, or one that does not list the
  // app), InvalidArgument naming the field. Store failures and missed deadlines become degraded
  // decisions (the policy's on_store_failure), never errors.
  void acquire(AcquireRequest request, DecisionCallback done);

  // Decides every request, sharing store calls where the store can (they are all submitted before
  // any answer is awaited). `done` gets the answers in request order, once, as acquire's.
  using BatchCallback = std::function<void(std::vector<StatusOr<Decision>>)>;
  void acquire_all(std::vector<AcquireRequest> requests, BatchCallback done);

  // acquire for callers that block: returns the answer. Must not run on a thread that answers
  // store calls (a store callback).
  StatusOr<Decision> acquire_blocking(AcquireRequest request);

  // Decides for a policy the caller holds (no lookup, no wait): the same checks, modes and
  // metrics. `done` as in acquire; `policy` must stay alive until it runs. `store_timeout` as in
  // AcquireRequest (0: LimiterOptions::store_timeout).
  void try_acquire_async(const policy::Policy& policy, std::string_view app,
                         std::string_view subject, std::int64_t cost, DecisionCallback done,
                         Micros store_timeout = 0);
  // The blocking form of try_acquire_async.
  StatusOr<Decision> try_acquire(const policy::Policy& policy, std::string_view app,
                                 std::string_view subject, std::int64_t cost);

  // Lease operations: true when a live lease was released / renewed. NotFound as in acquire;
  // store failures are errors (there is nothing to degrade to). `done` as in acquire.
  using LeaseCallback = std::function<void(StatusOr<bool>)>;
  void release(LeaseRequest request, LeaseCallback done);
  void renew(LeaseRequest request, LeaseCallback done);
  // Blocking forms for a policy the caller holds.
  StatusOr<bool> release(const policy::Policy& policy, std::string_view app,
                         std::string_view subject, std::string_view lease);
  StatusOr<bool> renew(const policy::Policy& policy, std::string_view app, std::string_view subject,
                       std::string_view lease);

  // Charges or refunds `call` (store.h apply_quota): the decision carries the signed balance; a
  // charge refused for the policy's max_debt is allowed = false. A disabled policy (or one
  // without limits) answers allowed with no balance and changes nothing; shadow mode reports a
  // refused charge as allowed with shadow_denied (nothing is charged). Errors: NotFound as
  // acquire; InvalidArgument; FailedPrecondition for a policy with a concurrency limit; store
  // failures and missed deadlines are errors (Unavailable / DeadlineExceeded), never degraded
  // decisions: a failure mode cannot know a debt, and a caller can retry a charge. `done` as in
  // acquire. Not counted in the acquire metrics.
  void apply_quota(QuotaCall call, DecisionCallback done);
  // The blocking form (not on a thread that answers store calls).
  StatusOr<Decision> apply_quota_blocking(QuotaCall call);

  // Drops the over-limit cache's denial of `subject` (an admin reset gave its units back).
  void forget_denial(std::string_view policy, std::string_view subject) {
    over_limit_cache_.forget(policy, subject);
  }
  const OverLimitCache& over_limit_cache() const { return over_limit_cache_; }
  BreakerState circuit_breaker_state() const { return breaker_.state(); }

  LimiterStats stats() const;
  // Token leasing (policies with lease_tokens, token_leases.h): takes, units, local decisions.
  TokenLeaseStats token_lease_stats() const;
  const DecisionMetrics& metrics() const { return metrics_; }

 private:
  struct Attempt;
  struct StoreCall;

  // The policy named `name` if it admits `app`, else NotFound.
  StatusOr<std::shared_ptr<const policy::Policy>> find(std::string_view name,
                                                       std::string_view app) const;
  // Asks the store for `attempt`, under a deadline when the call leaves the process.
  void ask_store(const std::shared_ptr<Attempt>& attempt);
  // The answer the defences give without the store: a cached denial, or a refusal of the open
  // circuit breaker (decided by the failure mode). Sets `probe` for the half-open probe.
  std::optional<StatusOr<Decision>> answer_from_defences(const policy::Policy& policy,
                                                         std::string_view subject,
                                                         std::int64_t cost, bool& probe);
  // Tells the breaker and the cache what the store answered to a call sent at `asked_at`.
  void observe_store(const policy::Policy& policy, std::string_view subject, std::int64_t cost,
                     const StatusOr<Decision>& stored, Micros asked_at, bool probe);
  // The store's own answer (or its deadline) for `attempt`: observed, then on_stored.
  void on_store_answer(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored);
  // The store's answer (or its deadline) for `attempt`: retry after a wait, or answer.
  void on_stored(const std::shared_ptr<Attempt>& attempt, StatusOr<Decision> stored);
  // Counts an answered decision of `policy` (asked at `started`) in the stats and metrics.
  void count(const policy::Policy& policy, const Decision& decision, Micros started);
  // Counts and delivers `attempt`'s answer.
  void answer(Attempt& attempt, StatusOr<Decision> decision);
  // The answer when the store need not be asked (refused, or the policy is disabled).
  std::optional<StatusOr<Decision>> decide_without_store(const policy::Policy& policy,
                                                         std::string_view app, std::int64_t cost);
  // The decision from the store's answer: degraded on a store failure, shadow mode applied.
  StatusOr<Decision> finish(const policy::Policy& policy, std::string_view subject,
                            std::int64_t cost, StatusOr<Decision> stored);
  Decision degrade(const policy::Policy& policy, std::string_view subject, std::int64_t cost);
  // Failure mode split: charges the local store this node's share of the subject's usage last
  // seen in the shared store (once per outage; last_seen_usage.h).
  void seed_split_share(const store::SubjectRef& ref, double fraction);
  void count_store_error(const Status& status);
  void lease_operation(LeaseRequest request, bool release, LeaseCallback done);
  // Takes `claim`'s places among max_pending and its shares, all or none; the overloaded()
  // answer naming the bound when they do not fit (counted).
  std::optional<Status> reserve(const PendingBound::Claim& claim);
  void unreserve(const PendingBound::Claim& claim) {
    if (bounded_) pending_bound_.give_back(claim);
  }
  // The claim of one acquire request.
  static PendingBound::Claim claim_of(const AcquireRequest& request);
  // acquire() for a request whose place is already reserved; gives it back on every answer.
  void acquire_reserved(AcquireRequest request, PendingBound::Claim claim, DecisionCallback done);
  TimerQueue& timers();
  // The token leases of policies with lease_tokens, made on first need.
  TokenLeases& token_leases();
  // Whether a decision of `cost` units goes through token leases: a policy with lease_tokens, a
  // store that leaves the process, and units to spend (a peek, cost 0, asks the store).
  bool leased(const policy::Policy& policy, std::int64_t cost) const {
    return policy.lease_tokens > 0 && cost > 0 && !store_.answers_in_process();
  }

  store::Store& store_;
  store::Store* local_;
  LimiterOptions options_;
  const Clock& steady_;  // the timers' clock: waits, deadlines and durations
  std::once_flag timers_started_;
  std::unique_ptr<TimerQueue> own_timers_;
  std::once_flag leases_started_;
  std::unique_ptr<TokenLeases> leases_;  // after own_timers_: destroyed first
  LastSeenUsage last_seen_;              // failure mode split: each subject's usage, to seed
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

// True for the store errors a failure mode covers (unreachable, timed out, overloaded, broken
// reply); false for the caller's own mistakes.
bool is_store_failure(const Status& status);
// True for the failures of a store that is down, slow or full — an outage, which the failure
// modes cover; false for a store that is misconfigured (credentials refused, permissions
// missing, a cluster node behind a single-server URL), which no waiting will fix.
bool is_store_outage(const Status& status);
// True for a store that refused the server's own credentials or permissions (NOAUTH, WRONGPASS,
// NOPERM): at start a configuration error, while serving a revoked credential.
bool is_store_refusal(const Status& status);
// The status of a decision the open circuit breaker kept from the store (not a store error).
Status circuit_open();
bool is_circuit_open(const Status& status);

}  // namespace sluice::service
