#include "sluice/redis_module/penalty_command.h"

#include <optional>
#include <string_view>

#include "sluice/algorithm/penalty.h"
#include "sluice/redis_module/command_call.h"
#include "sluice/redis_module/key_io.h"
#include "sluice/redis_module/stored_values.h"

namespace sluice::redis_module {

int penalty_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc) {
  const std::optional<CommandCall> call = begin_command(ctx, argv, argc);
  if (!call) return kOk;  // replied
  if (call->key_count != 1 || call->arg_count < 3) {
    return reply_error(ctx, "expected one key, an operation, within and quiet");
  }
  const std::optional<std::int64_t> within = integer_of(bytes_of(call->args[1]));
  const std::optional<std::int64_t> quiet = integer_of(bytes_of(call->args[2]));
  constexpr std::int64_t kExact = std::int64_t{1} << 53;
  if (!within || !quiet || *within < 0 || *quiet < 0 || *within >= kExact || *quiet >= kExact) {
    return reply_error(ctx, "within and quiet must be µs below 2^53");
  }
  const Micros now = call->now;
  StringKey key(ctx, call->keys[0], /*keep_open=*/false);
  const std::optional<std::string_view> value = key.read();
  // A key of another type reads as no box.
  algorithm::PenaltyState box = value ? decode_penalty(*value).value_or(algorithm::PenaltyState{})
                                      : algorithm::PenaltyState{};
  std::int64_t strikes = 0;
  for (const Micros at : box.strikes) {
    if (at > now - *within) ++strikes;
  }
  // As good as none once its last strike is older than `within` and its block plus `quiet` over.
  const algorithm::Penalty penalty{.within = *within, .quiet = *quiet};
  if (algorithm::penalty_expires_at(penalty, box) <= now) box = {}, strikes = 0;
  // The escalation counts only while remembered (the last block ended less than `quiet` ago).
  if (box.blocked_until > 0 && now >= box.blocked_until + *quiet) box.blocks = 0;
  // Every operation but 'lift' shows, as penalty.lua reads it.
  if (bytes_of(call->args[0]) == "lift") CallReply(api.Call(ctx, "DEL", "!s", call->keys[0]));
  api.ReplyWithArray(ctx, 4);
  api.ReplyWithLongLong(ctx, box.blocked_until);
  api.ReplyWithLongLong(ctx, box.blocks);
  api.ReplyWithLongLong(ctx, strikes);
  return api.ReplyWithLongLong(ctx, now);
}

}  // namespace sluice::redis_module
