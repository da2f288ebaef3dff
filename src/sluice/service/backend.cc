#include "sluice/service/backend.h"

#include <utility>

#include "sluice/core/clock.h"
#include "sluice/service/limiter.h"

namespace sluice::service {

store::Store& Backend::store() const {
  return redis ? static_cast<store::Store&>(*redis) : static_cast<store::Store&>(*memory);
}

std::string Backend::redis_address() const { return redis ? redis->address() : std::string(); }

std::size_t Backend::live_nodes() const { return heartbeat ? heartbeat->live_nodes() : 0; }

std::string Backend::unanswered_warning(std::string_view meanwhile) const {
  if (unanswered_at_start.ok()) return "";
  return "warning: redis " + redis_address() + " does not answer (" +
         unanswered_at_start.message() + "); " + std::string(meanwhile);
}

StatusOr<std::unique_ptr<Backend>> open_backend(std::string_view url, BackendOptions options) {
  auto backend = std::make_unique<Backend>();
  backend->memory = std::make_unique<store::MemoryStore>(SystemClock::instance(), options.memory);
  if (!url.empty() && url != "memory:") {
    StatusOr<std::unique_ptr<store::RedisStore>> redis =
        store::RedisStore::open(url, std::move(options.redis));
    if (!redis.ok()) {
      const std::string prefix = options.url_name.empty() ? "" : options.url_name + ": ";
      return invalid_argument(prefix + redis.status().message());
    }
    backend->redis = std::move(*redis);
    backend->redis->set_reservation_limits(options.memory.reservations);
    if (options.check_redis) {
      Status check = backend->redis->check_configuration();
      if (!check.ok() && !is_store_outage(check)) {
        return Status(check.code(), "redis " + backend->redis->address() + ": " + check.message());
      }
      backend->unanswered_at_start = std::move(check);
    }
    if (options.heartbeat) {
      StatusOr<std::unique_ptr<store::NodeHeartbeat>> heartbeat =
          store::NodeHeartbeat::create(backend->redis->client(), *options.heartbeat);
      if (!heartbeat.ok()) return invalid_argument(heartbeat.status().message());
      backend->heartbeat = std::move(*heartbeat);
      options.limiter.live_nodes = [heartbeat = backend->heartbeat.get()] {
        return heartbeat->live_nodes();
      };
    }
  }
  backend->limiter = std::make_unique<Limiter>(backend->store(), backend->memory.get(),
                                               std::move(options.limiter));
  if (backend->heartbeat) backend->heartbeat_loop.emplace(*backend->heartbeat);
  return backend;
}

}  // namespace sluice::service
