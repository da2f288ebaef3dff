#include "sluice/store/redis/node_heartbeat.h"

#include <string>
#include <utility>
#include <vector>

#include "sluice/store/redis/scripts.h"

namespace sluice::store {
namespace {

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

}  // namespace

StatusOr<std::unique_ptr<NodeHeartbeat>> NodeHeartbeat::create(
    std::shared_ptr<redis::Client> client, NodeHeartbeatOptions options) {
  if (options.node_id.empty() || options.node_id.size() > 256) {
    return invalid_argument("node_id: must be 1 to 256 bytes");
  }
  if (options.ttl < kMicrosPerMilli) return invalid_argument("heartbeat ttl: must be at least 1ms");
  return std::unique_ptr<NodeHeartbeat>(new NodeHeartbeat(std::move(client), std::move(options)));
}

StatusOr<std::size_t> NodeHeartbeat::beat() { return call(true); }

StatusOr<std::size_t> NodeHeartbeat::leave() { return call(false); }

StatusOr<std::size_t> NodeHeartbeat::call(bool beat) {
  std::vector<std::string> args = {beat ? "beat" : "leave", options_.node_id,
                                   std::to_string(options_.ttl)};
  if (options_.pinned_clock_for_tests != nullptr) {
    args.push_back(std::to_string(options_.pinned_clock_for_tests->now()));
  }
  StatusOr<redis::Reply> reply =
      client_->eval_script(heartbeat_script(options_.pinned_clock_for_tests != nullptr),
                           {options_.key}, std::move(args));
  if (!reply.ok()) return reply.status();
  if (!reply->is_integer() || reply->as_integer() < 0) {
    return internal_error("node heartbeat: unexpected reply " + reply->debug_string());
  }
  const auto live = static_cast<std::size_t>(reply->as_integer());
  if (beat) live_.store(live, std::memory_order_relaxed);
  return live;
}

}  // namespace sluice::store
