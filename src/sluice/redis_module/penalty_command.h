// SLUICE.PENALTY 1 key operation within quiet [time]: the `penalty` script as a module command
// (store/redis/scripts/penalty.lua), same KEYS, ARGV and reply: 'show' or 'lift' a subject's
// penalty box, replying blocked_until, blocks, strikes within the window and now (integers);
// 'lift' deletes the key after reading it.
#pragma once

#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

int penalty_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // namespace sluice::redis_module
