// How `sluice serve` and `sluice acquire` open their Redis: the URL read, then one question to
// Redis (RedisStore::check_configuration) so that a configuration error stops the command at
// start instead of passing for an outage.
#pragma once

#include <memory>
#include <string_view>

#include "sluice/store/redis/redis_store.h"

namespace sluice::cli {

struct RedisAtStart {
  std::unique_ptr<store::RedisStore> store;  // set when exit_code is 0
  int exit_code = 0;
};

// For `sluice <command>`, whose URL option is called `option` in messages. A bad URL (exit 2)
// and a configuration error — credentials refused, permissions missing, a cluster node (the exit
// code of its status) — are reported on stderr and returned. An outage is one warning line that
// names the address and ends with `meanwhile`, what decides until Redis answers; the store is
// returned all the same.
RedisAtStart open_redis_at_start(std::string_view command, std::string_view option,
                                 std::string_view url, redis::ClientOptions base,
                                 std::string_view meanwhile);

}  // namespace sluice::cli
