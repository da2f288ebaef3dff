#include "sluice/store/redis/node_heartbeat.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sluice/core/status_macros.h"
#include "sluice/store/redis/script_set.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::store {

const redis::Script& heartbeat_script(bool pinned_time) {
  static const auto source = [](bool pinned) {
    std::string text(pinned ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
    text += scripts::lua_heartbeat();
    return text;
  };
  static const redis::Script with_redis_time(source(false));
  static const redis::Script with_pinned_time(source(true));
  return pinned_time ? with_pinned_time : with_redis_time;
}
StatusOr<std::unique_ptr<NodeHeartbeat>> NodeHeartbeat::create(redis::Multiplexer& client,
                                                               NodeHeartbeatOptions options) {
  if (options.node_id.empty() || options.node_id.size() > 256) {
    return invalid_argument("node_id: must be 1 to 256 bytes");
  }
  if (options.ttl < kMicrosPerMilli) return invalid_argument("heartbeat ttl: must be at least 1ms");
  return std::unique_ptr<NodeHeartbeat>(new NodeHeartbeat(client, std::move(options)));
}

StatusOr<std::size_t> NodeHeartbeat::beat() { return call(true); }

StatusOr<std::size_t> NodeHeartbeat::leave() { return call(false); }

StatusOr<std::size_t> NodeHeartbeat::call(bool beat) {
  std::vector<std::string> args = {beat ? "beat" : "leave", options_.node_id,
                                   std::to_string(options_.ttl)};
  // The caller's time, as the store sends it: the tests' pinned clock, or this node's with
  // clock=client in the Redis URL (script_engine.h).
  const Clock* clock = caller_clock(options_.pinned_clock_for_tests, client_);
  append_pinned_time(args, clock);
  SLUICE_ASSIGN_OR_RETURN(
      redis::Reply reply,
      client_.eval_script(heartbeat_script(clock != nullptr), {options_.key}, std::move(args)));
  if (!reply.is_integer() || reply.as_integer() < 0) {
    return internal_error("node heartbeat: unexpected reply " + reply.debug_string());
  }
  const auto live = static_cast<std::size_t>(reply.as_integer());
  if (beat) live_.store(live, std::memory_order_relaxed);
  return live;
}

HeartbeatLoop::HeartbeatLoop(NodeHeartbeat& heartbeat, std::function<void(const Status&)> on_error)
    : heartbeat_(heartbeat), thread_([this, on_error = std::move(on_error)](std::stop_token stop) {
        const auto interval = std::chrono::microseconds(heartbeat_.options().ttl / 3);
        std::mutex mutex;
        std::condition_variable_any wake;
        std::unique_lock lock(mutex);
        while (!stop.stop_requested()) {
          StatusOr<std::size_t> beat = heartbeat_.beat();
          if (!beat.ok() && on_error) on_error(beat.status());
          wake.wait_for(lock, stop, interval, [] { return false; });
        }
      }) {}

HeartbeatLoop::~HeartbeatLoop() {
  thread_.request_stop();
  thread_.join();
  (void)heartbeat_.leave();  // best effort: else the others count this node for one more TTL
}

}  // namespace sluice::store
