// What every Sluice command shares with EVAL's shape, `NAME numkeys key... arg... [time]`:
// reading numkeys, reporting the key positions (Cluster routing, ACL key patterns), the clock
// read once per command (Redis's, or TESTS ONLY the pinned time in the last argument), and
// error replies. docs/redis-module.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/redis_module/redis_module_api.h"
#include "sluice/time.h"

namespace sluice::redis_module {

// How commands read the time: Redis's clock (the default), or TESTS ONLY the last argument, as
// the pinned scripts read it (clock_pinned.lua), when the module was loaded with `pinned-clock`.
enum class ClockSource { kRedis, kLastArgument };

// Set once at load (module.cc).
void set_clock_source(ClockSource source);

struct CommandCall {
  RedisModuleString** keys = nullptr;
  int key_count = 0;
  RedisModuleString** args = nullptr;  // after the keys, without the pinned time
  int arg_count = 0;
  Micros now = 0;
};

// The call's parts; nullopt when the command has already replied: an error (malformed numkeys,
// a missing or malformed pinned time), or the key positions when Redis asks for them.
std::optional<CommandCall> begin_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

std::string_view bytes_of(RedisModuleString* string);
// A decimal integer, all of `text`; nullopt otherwise.
std::optional<std::int64_t> integer_of(std::string_view text);
// Replies "ERR sluice: <message>".
int reply_error(RedisModuleCtx* ctx, const std::string& message);

}  // namespace sluice::redis_module
