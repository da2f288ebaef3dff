// The backend factory: what every process that decides in-process builds — the in-memory store,
// the Redis store when a Redis URL is given, the node heartbeat (failure mode `split`) and the
// decision pipeline (service::Limiter) over them. `sluice serve`, `sluice acquire`, the quota
// commands, `sluice bench` and the library's Client::open all open their backend here.
//
// It lives in service/, not in app/ (the composition root, which wires the servers): the library
// (client/) uses it too, and sits below app/. Its own CMake library, sluice_backend, because it
// links the Redis store, which sluice_service (the pipeline over the store port) does not.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/service/limiter.h"
#include "sluice/status.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/redis/node_heartbeat.h"
#include "sluice/store/redis/redis_store.h"

namespace sluice::service {

struct BackendOptions {
  // What the caller calls the URL (a flag, a setting, an option field): errors about it start
  // with "<url_name>: " (empty: the message alone).
  std::string url_name;
  // The in-memory store: the store itself for "memory:", and the one the failure modes `local`
  // and `split` decide on otherwise. Its reservation limits apply to the Redis store too.
  store::MemoryStoreOptions memory;
  // The Redis client's options; the URL's address, credentials and database override them.
  redis::MultiplexerOptions redis;
  // Ask Redis once at start (RedisStore::check_configuration), so that a configuration error —
  // credentials refused, permissions missing, a cluster node behind a redis:// URL — stops the
  // caller instead of passing for an outage (see Backend::unanswered_at_start).
  bool check_redis = false;
  // Failure mode `split`: this node's heartbeat on Redis, beating while the backend lives; the
  // limiter's live_nodes reads its count. Ignored on the memory store.
  std::optional<store::NodeHeartbeatOptions> heartbeat;
  // The pipeline's options; live_nodes is set here when there is a heartbeat.
  LimiterOptions limiter;
};

// Owns what it opened. Members are public so an owner may stop a part early (the library stops
// the Redis store's threads before the pipeline they call into); they are destroyed in reverse
// order: the heartbeat stops beating, the limiter goes (giving leased tokens back to a store still
// there), then the stores.
struct Backend {
  std::unique_ptr<store::MemoryStore> memory;
  std::unique_ptr<store::RedisStore> redis;  // null on the memory store
  std::unique_ptr<store::NodeHeartbeat> heartbeat;
  std::unique_ptr<Limiter> limiter;
  std::optional<store::HeartbeatLoop> heartbeat_loop;
  // With check_redis: Redis's answer when it did not answer at start (an outage: the backend
  // works, each policy's failure mode decides until Redis answers). OK otherwise.
  Status unanswered_at_start;

  // The store decisions go to: Redis when there is one, else the memory store.
  store::Store& store() const;
  // The Redis address as logs show it ("host:port/db"), or "" on the memory store.
  std::string redis_address() const;
  // Live nodes the heartbeat last counted; 0 without one.
  std::size_t live_nodes() const;
  // For the person starting the process when Redis did not answer at start: "warning: redis
  // ADDRESS does not answer (WHY); " and `meanwhile` (what decides until it does). Empty when it
  // answered.
  std::string unanswered_warning(std::string_view meanwhile) const;
};

// What a store URL names: "memory:" or "" (the in-memory store), or a Redis URL
// (redis://[user:pass@]host:port/db, rediss://…, redis+cluster://h1:p1,h2:p2,
// redis+sentinel://s1:p1/MASTER). Errors, each with a message that names the part at fault:
// InvalidArgument "<url_name>: …" for a URL that cannot be used; with check_redis, a configuration
// error as check_configuration's status, "redis ADDRESS: …"; InvalidArgument with the heartbeat's
// message when it cannot be made.
StatusOr<std::unique_ptr<Backend>> open_backend(std::string_view url, BackendOptions options);

}  // namespace sluice::service
