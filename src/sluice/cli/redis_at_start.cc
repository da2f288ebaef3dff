#include "sluice/cli/redis_at_start.h"

#include <iostream>
#include <utility>

#include "sluice/cli/command_support.h"
#include "sluice/service/limiter.h"

namespace sluice::cli {

RedisAtStart open_redis_at_start(std::string_view command, std::string_view option,
                                 std::string_view url, redis::ClientOptions base,
                                 std::string_view meanwhile) {
  StatusOr<std::unique_ptr<store::RedisStore>> opened =
      store::RedisStore::open(url, std::move(base));
  if (!opened.ok()) {
    std::cerr << "sluice " << command << ": " << option << ": " << opened.status().message()
              << "\n";
    return {.exit_code = 2};
  }
  store::RedisStore& redis = **opened;
  if (Status check = redis.check_configuration(); !check.ok()) {
    if (!service::is_store_outage(check)) {
      std::cerr << "sluice " << command << ": redis " << redis.address() << ": " << check.message()
                << "\n";
      return {.exit_code = exit_code_for(check.code())};
    }
    std::cerr << "sluice " << command << ": warning: redis " << redis.address()
              << " does not answer (" << check.message() << "); " << meanwhile << "\n";
  }
  return {.store = std::move(*opened)};
}

}  // namespace sluice::cli
