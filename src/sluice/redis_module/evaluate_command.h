// SLUICE.EVALUATE numkeys key... request... [time]: the `evaluate` script as a module command
// (store/redis/scripts/evaluate.lua). Same KEYS, same request bytes, same reply bytes, same keys
// written; docs/redis-module.md.
#pragma once

#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

// The command. Every request is parsed and the key count checked before any key is read: a
// malformed call answers an error ("ERR ...") and changes nothing.
int evaluate_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // namespace sluice::redis_module
