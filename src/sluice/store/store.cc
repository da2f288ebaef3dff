#include "sluice/store/store.h"

#include <openssl/rand.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/core/rendezvous.h"
#include "sluice/core/status_macros.h"
#include "sluice/core/waiter.h"

namespace sluice::store {

Status validate_subject_ref(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_policy_name(ref.policy, "policy"));
  if (ref.limits.empty()) return invalid_argument("limits: a policy needs at least one limit");
  if (ref.limits.size() > kMaxLimitsPerRef) {
    return invalid_argument("limits: a store decides at most " + std::to_string(kMaxLimitsPerRef) +
                            " limits in one call");
  }
  return validate_subject(ref.subject);
}

StatusOr<DryRun> AdminInspector::dry_run(const SubjectRef& /*ref*/, std::int64_t /*cost*/) {
  return Status(StatusCode::kUnimplemented, "this store cannot decide a dry run");
}

StatusOr<std::vector<LimitLeases>> AdminInspector::leases(const SubjectRef& /*ref*/,
                                                          std::size_t /*max*/) {
  return Status(StatusCode::kUnimplemented, "this store cannot list leases");
}

StatusOr<PenaltyStatus> AdminInspector::penalty(const SubjectRef& /*ref*/) {
  return Status(StatusCode::kUnimplemented, "this store has no penalty box");
}

StatusOr<bool> AdminInspector::lift_penalty(const SubjectRef& /*ref*/) {
  return Status(StatusCode::kUnimplemented, "this store has no penalty box");
}

PenaltyStatus penalty_status(const algorithm::Penalty& penalty,
                             const algorithm::PenaltyState& state, Micros now) {
  // The escalation counts only while remembered (the last block ended less than `quiet` ago).
  const bool remembered = state.blocked_until > 0 && now < state.blocked_until + penalty.quiet;
  PenaltyStatus status{.blocks = remembered ? state.blocks : 0};
  if (now < state.blocked_until) {
    status.blocked_for = state.blocked_until - now;
    status.blocked_until = state.blocked_until;
  }
  for (const Micros at : state.strikes) {
    if (at > now - penalty.within) ++status.strikes;
  }
  return status;
}

Status validate_penalty_ref(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  if (ref.penalty == nullptr) return invalid_argument("penalty: the policy has no penalty box");
  return {};
}

Status validate_quota_request(const SubjectRef& ref, const QuotaRequest& request) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(request.cost));
  if (request.max_debt < 0 || request.max_debt > algorithm::kMaxDebt) {
    return invalid_argument("max_debt: must be between 0 and " +
                            std::to_string(algorithm::kMaxDebt));
  }
  const bool reservation =
      request.operation == QuotaOperation::kReserve || request.operation == QuotaOperation::kSettle;
  if (reservation && (request.reservation.empty() || request.reservation.size() > 128)) {
    return invalid_argument("reservation: must be 1 to 128 bytes");
  }
  if (request.operation == QuotaOperation::kReserve &&
      (request.reservation_ttl < 1 || request.reservation_ttl > kMaxReservationTtl)) {
    return invalid_argument("reservation_ttl: must be between 1 µs and 7 days");
  }
  // A reserve of 0 is a peek by the shared rule (DESIGN.md §2: it changes nothing), so it cannot
  // leave a record behind; and a record of 0 units would give a settle nothing to do that a
  // charge of the actual cost does not. Refused rather than answered with an id that settles
  // nothing: a caller who reserves 0 has a bug to hear about.
  if (request.operation == QuotaOperation::kReserve && request.cost == 0) {
    return invalid_argument(
        "cost: a reserve must reserve at least 1 unit (to only read the balances, charge 0; to "
        "count work whose cost is known only afterwards, charge it then)");
  }
  return algorithm::check_quota_limits(ref.limits);
}

Status validate_reservation_ttl(const QuotaRequest& request, const ReservationLimits& limits) {
  if (request.operation == QuotaOperation::kReserve && request.reservation_ttl > limits.max_ttl) {
    return invalid_argument("reservation_ttl: must be at most " +
                            std::to_string(limits.max_ttl / kMicrosPerMilli) +
                            " ms (the store's reservation_max_ttl)");
  }
  return {};
}

Status too_many_reservations(const ReservationLimits& limits) {
  return Status(StatusCode::kResourceExhausted,
                "reservation: the subject already holds " + std::to_string(limits.max_per_subject) +
                    " open reservations (reservations_per_subject); settle some or let them "
                    "expire");
}

void DecisionPort::take_tokens(const SubjectRef& ref, std::int64_t least, std::int64_t most,
                               TakeDone done) {
  (void)ref;
  (void)least;
  (void)most;
  done(Status(StatusCode::kUnimplemented, "this store has no token leases"));
}

void DecisionPort::give_back_tokens(const SubjectRef& ref, std::int64_t units, Micros taken_at,
                                    Done done) {
  (void)ref;
  (void)units;
  (void)taken_at;
  done(Status(StatusCode::kUnimplemented, "this store has no token leases"));
}

namespace {

// The answer of `submit`, which calls the port with a callback: at once from a store that
// answers in process (no hand-off), else waited for on this thread.
template <typename T, typename Submit>
T wait_for(const DecisionPort& port, Submit submit) {
  if (port.answers_in_process()) {
    std::optional<T> answered;
    submit([&answered](T answer) { answered.emplace(std::move(answer)); });
    return *std::move(answered);
  }
  auto rendezvous = std::make_shared<Rendezvous<T>>();
  submit([rendezvous](T answer) { rendezvous->deliver(std::move(answer)); });
  return rendezvous->wait(kDefaultBlockingSpin);
}

}  // namespace

StatusOr<Decision> acquire_now(DecisionPort& port, const SubjectRef& ref, std::int64_t cost) {
  return wait_for<StatusOr<Decision>>(
      port, [&](DecisionPort::Done done) { port.acquire(ref, cost, std::move(done)); });
}

StatusOr<bool> lease_now(DecisionPort& port, const SubjectRef& ref, LeaseOperation operation,
                         std::string_view lease) {
  return wait_for<StatusOr<bool>>(port, [&](DecisionPort::LeaseDone done) {
    port.lease(ref, operation, lease, std::move(done));
  });
}

StatusOr<Decision> apply_quota_now(DecisionPort& port, const SubjectRef& ref,
                                   const QuotaRequest& request) {
  return wait_for<StatusOr<Decision>>(
      port, [&](DecisionPort::Done done) { port.apply_quota(ref, request, std::move(done)); });
}

// From OpenSSL's CSPRNG: a lease id is a capability (whoever knows it releases or renews the
// lease), and the mt19937_64 used before was seeded with 32 bits and continued the same sequence
// in both processes after a fork. OpenSSL reseeds after a fork.
std::string new_unique_id() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    // store.h promises an id, not an error; a guessable one would be worse than stopping. The
    // system's entropy source failing is not something a lease can work around.
    std::fputs("sluice: OpenSSL RAND_bytes failed; cannot make a lease id\n", stderr);
    std::abort();
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(2 * bytes.size(), '0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    id[2 * i] = kHex[bytes[i] >> 4];
    id[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return id;
}

}  // namespace sluice::store
