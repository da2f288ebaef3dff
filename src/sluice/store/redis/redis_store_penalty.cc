// RedisStore's admin view of the penalty box (algorithm/penalty.h): show and lift, through the
// `penalty` script (scripts/penalty.lua) on Redis's clock. Acquires apply the penalty in the
// `evaluate` script itself, in the same call as the limits.
#include <string>
#include <vector>

#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::store {

const redis::Script& penalty_script(bool pinned_time) {
  static const auto source = [](bool pinned) {
    std::string text(pinned ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
    text += scripts::lua_common();
    text += scripts::lua_penalty();
    return text;
  };
  static const redis::Script with_redis_time(source(false), "SLUICE.PENALTY");
  static const redis::Script with_pinned_time(source(true), "SLUICE.PENALTY");
  return pinned_time ? with_pinned_time : with_redis_time;
}
namespace {}  // namespace

StatusOr<PenaltyStatus> RedisStore::penalty_operation(const SubjectRef& ref,
                                                      std::string_view operation) {
  SLUICE_RETURN_IF_ERROR(validate_penalty_ref(ref));
  std::string key = redis_penalty_key(ref.policy, ref.subject);
  std::vector<std::string> args = {std::string(operation), std::to_string(ref.penalty->within),
                                   std::to_string(ref.penalty->quiet)};
  append_pinned_time(args, caller_clock_);
  SLUICE_ASSIGN_OR_RETURN(const redis::Reply reply,
                          client_->eval_script(penalty_script(caller_clock_ != nullptr),
                                               {std::move(key)}, std::move(args)));
  const std::vector<redis::Reply>& items = reply.elements();
  if (!reply.is_array() || items.size() != 4) {
    return internal_error("redis store: unexpected penalty reply " + reply.debug_string());
  }
  for (const redis::Reply& item : items) {
    if (!item.is_integer()) {
      return internal_error("redis store: unexpected penalty reply " + reply.debug_string());
    }
  }
  const Micros blocked_until = items[0].as_integer();
  const Micros now = items[3].as_integer();
  PenaltyStatus status{.blocks = items[1].as_integer(), .strikes = items[2].as_integer()};
  if (now < blocked_until) {
    status.blocked_for = blocked_until - now;
    status.blocked_until = blocked_until;
  }
  return status;
}

StatusOr<PenaltyStatus> RedisStore::penalty(const SubjectRef& ref) {
  return penalty_operation(ref, "show");
}

StatusOr<bool> RedisStore::lift_penalty(const SubjectRef& ref) {
  SLUICE_ASSIGN_OR_RETURN(const PenaltyStatus before, penalty_operation(ref, "lift"));
  return before != PenaltyStatus{};
}

}  // namespace sluice::store
