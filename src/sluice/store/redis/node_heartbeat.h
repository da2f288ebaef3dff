// NodeHeartbeat: each `sluice serve` node says it is alive in Redis and reads how many nodes are,
// for failure mode `split` (docs/defences.md "Budget-preserving outage mode"): during an outage
// a node grants limit ÷ the live count it last read. One sorted set (node id -> heartbeat
// expiry, µs on Redis's clock) trimmed by score on every call: no key per node, no SCAN, one
// round trip per beat. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "sluice/core/clock.h"
#include "sluice/status.h"
#include "sluice/store/redis/multiplexer.h"

namespace sluice::store {

struct NodeHeartbeatOptions {
  // This node's id: unique among the nodes sharing the Redis (serve: --node-id or random).
  std::string node_id;
  // How long a beat keeps the node counted. A node that stops beating (crash, partition) stops
  // counting after it; serve beats every ttl / 3.
  Micros ttl = 3 * kMicrosPerSecond;
  // The sorted set, in one hash slot ("{…}") so a Redis Cluster routes it as any key.
  std::string key = "sluice:{nodes}";
  // TESTS ONLY: the script's clock instead of Redis's TIME (as RedisStoreOptions).
  const Clock* pinned_clock_for_tests = nullptr;
};

class NodeHeartbeat {
 public:
  // `client` must outlive the heartbeat. InvalidArgument for an empty id or a TTL under 1 ms.
  static StatusOr<std::unique_ptr<NodeHeartbeat>> create(redis::Multiplexer& client,
                                                         NodeHeartbeatOptions options);

  // Registers this node for `ttl` and reads the live count (blocking: not on a Redis I/O thread).
  // The count is remembered (live_nodes) only on success: during an outage the last one stays.
  // Errors: the client's (Unavailable, DeadlineExceeded...).
  StatusOr<std::size_t> beat();
  // Removes this node at once (a clean shutdown), so the others' count drops without waiting
  // for the TTL. Returns the count left.
  StatusOr<std::size_t> leave();

  // The live count last read; 0 before the first successful beat.
  std::size_t live_nodes() const { return live_.load(std::memory_order_relaxed); }
  const NodeHeartbeatOptions& options() const { return options_; }

 private:
  NodeHeartbeat(redis::Multiplexer& client, NodeHeartbeatOptions options)
      : client_(client), options_(std::move(options)) {}
  StatusOr<std::size_t> call(bool beat);

  redis::Multiplexer& client_;
  NodeHeartbeatOptions options_;
  std::atomic<std::size_t> live_{0};
};

// Beats every ttl / 3 on a thread of its own (so a missed beat or two does not drop the node),
// and leaves when destroyed. `on_error` (optional) hears each failed beat, on that thread.
class HeartbeatLoop {
 public:
  HeartbeatLoop(NodeHeartbeat& heartbeat, std::function<void(const Status&)> on_error = {});
  ~HeartbeatLoop();
  HeartbeatLoop(const HeartbeatLoop&) = delete;
  HeartbeatLoop& operator=(const HeartbeatLoop&) = delete;

 private:
  NodeHeartbeat& heartbeat_;
  std::jthread thread_;
};

}  // namespace sluice::store
