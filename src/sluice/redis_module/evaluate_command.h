// SLUICE.EVALUATE numkeys key... request... [time]: the `evaluate` script as a module command
// (store/redis/scripts/evaluate.lua). Same KEYS, same request bytes, same reply bytes, same keys
// written; docs/redis-module.md.
#pragma once

#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

// How the command reads the time: Redis's clock (the default), or TESTS ONLY the last argument,
// as the pinned scripts read it (clock_pinned.lua), when the module was loaded with
// `pinned-clock`.
enum class ClockSource { kRedis, kLastArgument };

// Set once at load (module.cc).
void set_clock_source(ClockSource source);

// The command. Every request is parsed and the key count checked before any key is read: a
// malformed call answers an error ("ERR ...") and changes nothing.
int evaluate_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // namespace sluice::redis_module
