// Store: where rate-limit state lives (DESIGN.md §3), as two narrow interfaces: the decision port
// (DecisionPort: one asynchronous operation on one subject — decide a policy's limits atomically,
// release/renew concurrency leases, quota operations, token leases), which the decision pipeline
// uses, and the admin inspector (AdminInspector: inspect, dry run, leases, penalty box, reset),
// which the admin API uses. Implementations: memory (in process, answers inline) and redis
// (shared by every instance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/decision.h"
#include "sluice/status.h"
#include "sluice/verdict.h"

namespace sluice::store {

// Which state a call addresses: limits of policy `policy` for subject `subject` (arbitrary bytes,
// at most kMaxSubjectBytes). The limits are the policy's, in order; state is kept per index.
struct SubjectRef {
  std::string_view policy;
  std::span<const algorithm::Limit> limits;
  std::string_view subject;
  // The policy's penalty box (algorithm/penalty.h), or null: acquire applies it in the same
  // atomic step as the limits. Must outlive the call (until it returns).
  const algorithm::Penalty* penalty = nullptr;
};

// The most limits one call may name (policies hold at most 32: policy/document.cc).
inline constexpr std::size_t kMaxLimitsPerRef = 255;

// InvalidArgument naming the field: bad policy name, no limits or more than kMaxLimitsPerRef,
// subject over 1 024 bytes.
Status validate_subject_ref(const SubjectRef& ref);

// validate_subject_ref's errors, and InvalidArgument naming "penalty" when ref.penalty is null.
Status validate_penalty_ref(const SubjectRef& ref);

// A store's decision from a policy verdict (algorithm/evaluate.h).
inline Decision decision_from(const algorithm::PolicyVerdict& verdict) {
  return {.verdict = verdict.verdict, .limit_index = verdict.limit_index};
}

// A quota operation (algorithm/quota.h, docs/quotas.md): charge `cost` after the fact, taking
// each limit's balance at most `max_debt` below zero, or refund `cost` (max_debt unused).
// kReserve charges `cost` (the estimate) as kCharge does and, when charged, records reservation
// `reservation` for `reservation_ttl`; kSettle ends reservation `reservation` with the actual
// cost `cost`: it charges actual - estimate (bounded by max_debt) or refunds estimate - actual.
// An unknown, settled or expired reservation is NotFound and changes nothing: an expired one
// leaves its estimate charged.
enum class QuotaOperation : std::uint8_t { kCharge, kRefund, kReserve, kSettle };
struct QuotaRequest {
  QuotaOperation operation = QuotaOperation::kCharge;
  // 0 reports the balances and changes nothing (charge, refund); a reserve needs at least 1 (a
  // reservation of nothing would be a record with nothing to settle: validate_quota_request).
  std::int64_t cost = 0;
  std::int64_t max_debt = 0;
  // kReserve and kSettle: the reservation's id, 1 to 128 bytes (reserve: a new one, e.g.
  // new_unique_id()).
  std::string_view reservation;
  // kReserve: how long the reservation may be settled, 1 µs to kMaxReservationTtl.
  Micros reservation_ttl = 0;
};

inline constexpr Micros kMaxReservationTtl = 7 * kMicrosPerDay;

// How far a store lets reservations go (issue 32 H3: reservations never settled must not grow a
// store without bound). A reserve beyond either bound changes nothing: a TTL above max_ttl is
// InvalidArgument naming reservation_ttl; a subject already holding max_per_subject open
// reservations gets ResourceExhausted naming the setting (settle some, or let them expire).
struct ReservationLimits {
  Micros max_ttl = kMicrosPerHour;     // 1 µs .. kMaxReservationTtl
  std::size_t max_per_subject = 1000;  // open (unsettled, unexpired) reservations of one subject
};
// A call on a subject does work linear in its open reservations (memory: the expiry sweep and
// a settle's lookup), under its shard's lock: the bound keeps that work small.
inline constexpr std::size_t kMaxReservationsPerSubject = 10'000;

// validate_quota_request's checks, plus a reserve's reservation_ttl against `limits.max_ttl`.
Status validate_reservation_ttl(const QuotaRequest& request, const ReservationLimits& limits);

// The ResourceExhausted a reserve gets when its subject holds limits.max_per_subject open
// reservations.
Status too_many_reservations(const ReservationLimits& limits);

// InvalidArgument for a bad ref, cost or max_debt (naming the field); FailedPrecondition naming a
// concurrency limit, which cannot be charged or refunded.
Status validate_quota_request(const SubjectRef& ref, const QuotaRequest& request);

// 128 random bits as 32 hex digits: unique across processes without coordination.
std::string new_unique_id();

// What acquire would decide now for a cost, without recording it (AdminInspector::dry_run).
struct DryRun {
  std::vector<algorithm::Verdict> limits;  // each limit's verdict for the cost, in limit order
  algorithm::PolicyVerdict policy;         // the policy's, chosen as acquire chooses it
};

// A subject's penalty box as the admin inspector shows it (AdminInspector::penalty).
struct PenaltyStatus {
  // Until the current block ends, from the store's now (Redis: its TIME); absent: not blocked.
  std::optional<Micros> blocked_for;
  std::optional<Micros> blocked_until;  // the same instant, on the store's clock
  std::int64_t blocks = 0;              // blocks in the current escalation (the next lasts longer)
  std::int64_t strikes = 0;             // denials within the window so far
  friend bool operator==(const PenaltyStatus&, const PenaltyStatus&) = default;
};

// What `state` shows at `now` (strikes within the penalty's window only).
PenaltyStatus penalty_status(const algorithm::Penalty& penalty,
                             const algorithm::PenaltyState& state, Micros now);

// One live lease of a concurrency limit (AdminInspector::leases).
struct HeldLease {
  std::string id;
  Micros expires_after = 0;  // from the store's now (Redis: its TIME), > 0
  std::int64_t cost = 0;     // units it holds
  friend bool operator==(const HeldLease&, const HeldLease&) = default;
};

// The live leases of one concurrency limit of a policy.
struct LimitLeases {
  std::size_t limit_index = 0;  // in the policy's limits
  std::size_t count = 0;        // live leases, all of them
  std::int64_t units = 0;       // units they hold together
  // The first `max` of them by expiry, soonest first (ties by id).
  std::vector<HeldLease> leases;
  friend bool operator==(const LimitLeases&, const LimitLeases&) = default;
};

// One take_tokens answer: the units taken (0 when refused) and when, on the store's clock.
struct TokenTake {
  Decision decision;  // allowed with the balance left when taken; else the refusal
  std::int64_t taken = 0;
  Micros taken_at = 0;
};

// Release or renew: what a lease operation does to a concurrency lease.
enum class LeaseOperation : std::uint8_t {
  kRelease,  // frees the lease (idempotent): true if a live lease was freed
  kRenew,    // extends a live lease by the limit's lease_ttl from now: false if unknown or expired
};

// DecisionPort: how the decision pipeline asks a store — one operation on one subject,
// asynchronously. `done` runs exactly once, either before the call returns (a store that decides
// in process: answers_in_process) or later on a store thread (Redis: on the client's I/O thread,
// so `done` must not block). Arguments need not outlive the call. Calls made at the same time
// share the store's round trips where it can (Redis: decision_batcher.h), so a batch is just
// several calls submitted before any answer is awaited. Errors: InvalidArgument for bad input;
// Unavailable / DeadlineExceeded when the store is unreachable; Internal for a broken reply.
class DecisionPort {
 public:
  virtual ~DecisionPort() = default;

  using Done = std::function<void(StatusOr<Decision>)>;
  using LeaseDone = std::function<void(StatusOr<bool>)>;
  using TakeDone = std::function<void(StatusOr<TokenTake>)>;

  // Decides `cost` (0 peeks) for the subject over all its limits in one atomic step. A denial is
  // a successful decision.
  virtual void acquire(const SubjectRef& ref, std::int64_t cost, Done done) = 0;

  // Releases or renews lease `lease` of the subject's concurrency limits (LeaseOperation).
  virtual void lease(const SubjectRef& ref, LeaseOperation operation, std::string_view lease,
                     LeaseDone done) = 0;

  // Applies a quota operation to the subject's limits in one atomic step, all or nothing
  // (algorithm/quota.h). The decision's verdict carries the signed balance; a charge refused for
  // the debt bound is a successful decision (allowed false). Errors: validate_quota_request's.
  virtual void apply_quota(const SubjectRef& ref, const QuotaRequest& request, Done done) = 0;

  // Token batches (service/token_batches.h, docs/defences.md): takes min(most, what every limit
  // holds) units for the subject in one atomic step, on the store's clock, when that is at least
  // `least` (1 <= least <= most); else takes nothing and answers the denial a charge of `least`
  // would get. Errors: as apply_quota's (limits must be token buckets, GCRA, fixed or sliding
  // windows: algorithm/token_lease.h). Default: Unimplemented (stores that decide in process
  // have nothing to lease).
  virtual void take_tokens(const SubjectRef& ref, std::int64_t least, std::int64_t most,
                           TakeDone done);
  // Gives back `units` unused units of a take answered at `taken_at` (TokenTake::taken_at): a
  // bucket is refunded up to its capacity; a window limit only while its window is still the
  // one they were taken in. Default: Unimplemented.
  virtual void give_back_tokens(const SubjectRef& ref, std::int64_t units, Micros taken_at,
                                Done done);

  // True when every call answers before it returns (the store decides in process): callers then
  // need no deadline of their own.
  virtual bool answers_in_process() const { return true; }
};

// AdminInspector: what the admin API (server/http/subject_api.h) reads and resets of a subject.
// Blocking calls, made on the admin pool, never on a decision path.
class AdminInspector {
 public:
  virtual ~AdminInspector() = default;

  // Each limit's current verdict for a cost-0 peek, in limit order. Changes nothing.
  virtual StatusOr<std::vector<algorithm::Verdict>> inspect(const SubjectRef& ref) = 0;
  // Forgets the subject's state under every limit: it is as if never seen.
  virtual Status reset(const SubjectRef& ref) = 0;

  // What an acquire of `cost` would decide now, computed as it would be (Redis: by the same
  // script, on Redis's clock), but recorded nowhere and taking no lease: for the admin
  // inspector's "when may a denied caller retry". Changes nothing. The default answers
  // Unimplemented (stores for tests); the memory and Redis stores implement it.
  virtual StatusOr<DryRun> dry_run(const SubjectRef& ref, std::int64_t cost);

  // The live leases of each concurrency limit of the policy (none: an empty list), each listing
  // at most `max` of them. Changes nothing. Default: Unimplemented, as dry_run.
  virtual StatusOr<std::vector<LimitLeases>> leases(const SubjectRef& ref, std::size_t max);

  // The subject's penalty box under `ref.penalty` (required: InvalidArgument when null). Changes
  // nothing. Default: Unimplemented, as dry_run.
  virtual StatusOr<PenaltyStatus> penalty(const SubjectRef& ref);
  // Lifts the subject's block and forgets its strikes and escalation (an owner's pardon); its
  // limits keep their state. True if there was anything to forget. Default: Unimplemented.
  virtual StatusOr<bool> lift_penalty(const SubjectRef& ref);
};

// Store: a store as its implementations (memory, Redis) offer it — the decision port and the
// admin inspector of the same state.
class Store : public DecisionPort, public AdminInspector {};

// The port's calls for a caller that blocks (tools, tests, the failure mode's in-process store):
// the answer, waited for on the calling thread (at once for a store that answers in process).
// Never on a thread that answers store calls.
StatusOr<Decision> acquire_now(DecisionPort& port, const SubjectRef& ref, std::int64_t cost);
StatusOr<bool> lease_now(DecisionPort& port, const SubjectRef& ref, LeaseOperation operation,
                         std::string_view lease);
StatusOr<Decision> apply_quota_now(DecisionPort& port, const SubjectRef& ref,
                                   const QuotaRequest& request);

}  // namespace sluice::store
