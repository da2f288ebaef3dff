// /metrics for the Redis client's engines (script_engine.h). In the client's library so that
// the HTTP layer needs no Redis.
#pragma once

#include <string>

#include "sluice/store/redis/multiplexer.h"

namespace sluice::redis {

// The Redis store's engines (store/redis/script_engine.h):
//   sluice_redis_engine{node,engine}         gauge, 1 per node script calls reach now
//   sluice_redis_engine_fallbacks_total      calls re-sent as scripts: a node lacked the module's
//                                            command or the function
//   sluice_redis_script_reloads_total        EVALSHA answered NOSCRIPT (sent again with the source)
void write_engine_metrics(std::string& out, const Multiplexer& client);

}  // namespace sluice::redis
