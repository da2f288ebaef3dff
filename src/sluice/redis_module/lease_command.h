// SLUICE.LEASE numkeys key... operation lease ttl... [time]: the `lease` script as a module
// command (store/redis/scripts/lease.lua), same KEYS, ARGV and reply: 'release' or 'renew' a
// concurrency lease in every concurrency limit's key (then each key's lease_ttl in µs), replying
// 1 when any had it live; or 'list' (then the most leases to list per key), replying per key the
// live leases' count and units, then id, µs to expiry and units of the soonest-expiring ones.
#pragma once

#include "sluice/redis_module/redis_module_api.h"

namespace sluice::redis_module {

int lease_command(RedisModuleCtx* ctx, RedisModuleString** argv, int argc);

}  // namespace sluice::redis_module
