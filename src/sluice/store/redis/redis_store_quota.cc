// RedisStore's quota operations (store.h apply_quota): one call of the `quota` script
// (scripts/quota.lua), which decides charge or refund over all limits of the subject on Redis's
// clock. Kept apart from redis_store.cc: quota operations never go through the decision batcher.
#include <bit>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "sluice/algorithm/token_lease.h"
#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/script_set.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::store {

const redis::Script& quota_script(bool pinned_time) {
  static const auto source = [](bool pinned) {
    std::string text(pinned ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
    text += scripts::lua_common();
    text += with_shared_blocks(scripts::lua_quota());
    return text;
  };
  // No module command yet: the module has no SLUICE.QUOTA, so quota calls stay scripts (or
  // Functions) on every engine (docs/redis-module.md, "Not done").
  static const redis::Script with_redis_time(source(false));
  static const redis::Script with_pinned_time(source(true));
  return pinned_time ? with_pinned_time : with_redis_time;
}
namespace {

// Eight packed doubles: the seven of an evaluate verdict, then the signed balance.
constexpr std::size_t kQuotaReplyBytes = kVerdictBytes + 8;

bool uses_reservations(const QuotaRequest& request) {
  return request.operation == QuotaOperation::kReserve ||
         request.operation == QuotaOperation::kSettle;
}

// The limit keys, then for reserve / settle the reservation's own key (the limit key of index 0
// with "r:<id>" for its index) and the subject's index of open reservations ("r"), all in the
// same hash slot.
std::vector<std::string> quota_keys(const SubjectRef& ref, const QuotaRequest& request) {
  std::vector<std::string> keys;
  keys.reserve(ref.limits.size() + 1);
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    keys.push_back(redis_limit_key(ref.policy, ref.subject, i));
  }
  if (uses_reservations(request)) {
    std::string reservation = keys.front();
    reservation.back() = 'r';  // "…}:0" -> "…}:r:<id>"
    std::string index = reservation;
    reservation += ':';
    reservation += request.reservation;
    keys.push_back(std::move(reservation));
    keys.push_back(std::move(index));
  }
  return keys;
}

QuotaScriptOperation script_operation(QuotaOperation operation) {
  switch (operation) {
    case QuotaOperation::kCharge:
      return QuotaScriptOperation::kCharge;
    case QuotaOperation::kRefund:
      return QuotaScriptOperation::kRefund;
    case QuotaOperation::kReserve:
      return QuotaScriptOperation::kReserve;
    case QuotaOperation::kSettle:
      return QuotaScriptOperation::kSettle;
  }
  return QuotaScriptOperation::kCharge;
}

Status unexpected_quota_reply(const redis::Reply& reply) {
  return internal_error("redis store: unexpected quota script reply " + reply.debug_string());
}

StatusOr<Decision> quota_decision(const StatusOr<redis::Reply>& reply, std::size_t limits,
                                  const ReservationLimits& reservations = {}) {
  SLUICE_RETURN_IF_ERROR(reply.status());
  if (reply->is_string() && reply->as_string() == "full") {
    return too_many_reservations(reservations);
  }
  if (reply->is_string() && reply->as_string().empty()) {
    return not_found(
        "reservation: unknown, already settled or expired (an expired reservation's estimate "
        "stays charged)");
  }
  if (!reply->is_string() || reply->as_string().size() != kQuotaReplyBytes) {
    return unexpected_quota_reply(*reply);
  }
  const std::string_view bytes = reply->as_string();
  SLUICE_ASSIGN_OR_RETURN(const std::vector<algorithm::PolicyVerdict> verdicts,
                          unpack_verdicts(bytes.substr(0, kVerdictBytes)));
  if (verdicts.size() != 1 || verdicts[0].limit_index >= limits) {
    return unexpected_quota_reply(*reply);
  }
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    bits |= std::uint64_t{static_cast<unsigned char>(bytes[kVerdictBytes + i])} << (8 * i);
  }
  const double balance = std::bit_cast<double>(bits);
  if (!(std::abs(balance) < 0x1p53) || balance != std::trunc(balance)) {
    return unexpected_quota_reply(*reply);
  }
  Decision decision = decision_from(verdicts[0]);
  decision.verdict.balance = static_cast<std::int64_t>(balance);
  return decision;
}

// A take's reply: the quota reply, then the units taken and Redis's now.
StatusOr<TokenTake> take_answer(const StatusOr<redis::Reply>& reply, std::size_t limits) {
  SLUICE_RETURN_IF_ERROR(reply.status());
  if (!reply->is_string() || reply->as_string().size() != kQuotaReplyBytes + 16) {
    return unexpected_quota_reply(*reply);
  }
  const std::string_view bytes = reply->as_string();
  SLUICE_ASSIGN_OR_RETURN(
      Decision decision,
      quota_decision(redis::Reply::bulk(std::string(bytes.substr(0, kQuotaReplyBytes))), limits));
  auto number = [&](std::size_t at) {
    std::uint64_t bits = 0;
    for (std::size_t i = 0; i < 8; ++i) {
      bits |= std::uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    }
    return std::bit_cast<double>(bits);
  };
  const double taken = number(kQuotaReplyBytes);
  const double taken_at = number(kQuotaReplyBytes + 8);
  if (!(taken >= 0 && taken < 0x1p53 && taken == std::trunc(taken)) ||
      !(taken_at >= 0 && taken_at < 0x1p53 && taken_at == std::trunc(taken_at))) {
    return unexpected_quota_reply(*reply);
  }
  return TokenTake{.decision = std::move(decision),
                   .taken = static_cast<std::int64_t>(taken),
                   .taken_at = static_cast<Micros>(taken_at)};
}

}  // namespace

void RedisStore::take_tokens(const SubjectRef& ref, std::int64_t least, std::int64_t most,
                             TakeDone done) {
  run_quota_script(ref, QuotaRequest{.operation = QuotaOperation::kCharge, .cost = most},
                   take_args(ref, least, most),
                   [limits = ref.limits.size(), done = std::move(done)](
                       const StatusOr<redis::Reply>& reply) { done(take_answer(reply, limits)); });
}

void RedisStore::give_back_tokens(const SubjectRef& ref, std::int64_t units, Micros taken_at,
                                  Done done) {
  const QuotaRequest request{.operation = QuotaOperation::kRefund, .cost = units};
  run_quota_script(
      ref, request, token_batch_args(ref, request, QuotaScriptOperation::kGive, taken_at),
      [limits = ref.limits.size(), done = std::move(done)](const StatusOr<redis::Reply>& reply) {
        done(quota_decision(reply, limits));
      });
}

StatusOr<std::vector<std::string>> RedisStore::take_args(const SubjectRef& ref, std::int64_t least,
                                                         std::int64_t most) const {
  if (least < 1 || most < least) {
    return invalid_argument("take: needs 1 <= least <= most (got least " + std::to_string(least) +
                            ", most " + std::to_string(most) + ")");
  }
  return token_batch_args(ref, {.operation = QuotaOperation::kCharge, .cost = most},
                          QuotaScriptOperation::kTake, least);
}

StatusOr<std::vector<std::string>> RedisStore::token_batch_args(const SubjectRef& ref,
                                                                const QuotaRequest& request,
                                                                QuotaScriptOperation operation,
                                                                std::int64_t bound) const {
  SLUICE_RETURN_IF_ERROR(algorithm::check_token_lease_limits(ref.limits));
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> args, quota_args(ref, request, operation));
  args.insert(args.begin() + 1, std::to_string(bound));
  return args;
}

void RedisStore::run_quota_script(const SubjectRef& ref, const QuotaRequest& request,
                                  StatusOr<std::vector<std::string>> args,
                                  std::function<void(const StatusOr<redis::Reply>&)> answer) {
  if (!args.ok()) {
    answer(args.status());  // an input error: answered at once, as a failed reply would be
    return;
  }
  client_->async_eval_script(
      quota_script(caller_clock_ != nullptr), quota_keys(ref, request), std::move(*args),
      [answer = std::move(answer)](StatusOr<redis::Reply> reply) { answer(reply); });
}

StatusOr<std::vector<std::string>> RedisStore::quota_args(const SubjectRef& ref,
                                                          const QuotaRequest& request,
                                                          QuotaScriptOperation operation) const {
  SLUICE_RETURN_IF_ERROR(validate_quota_request(ref, request));
  SLUICE_RETURN_IF_ERROR(validate_reservation_ttl(request, options_.reservations));
  std::vector<std::string> args = {
      quota_request(operation, ref.limits, request.cost, request.max_debt, calendar_now())};
  if (request.operation == QuotaOperation::kReserve) {
    args.push_back(std::to_string(request.reservation_ttl));
    args.push_back(std::to_string(options_.reservations.max_per_subject));
  }
  append_pinned_time(args, caller_clock_);
  return args;
}

void RedisStore::apply_quota(const SubjectRef& ref, const QuotaRequest& request, Done done) {
  run_quota_script(ref, request, quota_args(ref, request, script_operation(request.operation)),
                   [limits = ref.limits.size(), reservations = options_.reservations,
                    done = std::move(done)](const StatusOr<redis::Reply>& reply) {
                     done(quota_decision(reply, limits, reservations));
                   });
}

}  // namespace sluice::store
