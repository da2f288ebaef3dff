// sluice::redis::internal::ClusterRouter: sends each command to the master that serves its key's
// hash slot in a Redis Cluster, and follows the cluster as it changes. Internal to the client.
//
// - The slot map comes from CLUSTER SHARDS (CLUSTER SLOTS on servers before 7.0), asked of the
//   seeds at start and again, throttled to one read per `cluster_refresh_min_interval`, whenever
//   the cluster says the map is stale: MOVED, a master that cannot be reached, READONLY (the node
//   became a replica) or CLUSTERDOWN.
// - MOVED: the slot's entry is updated at once and the command re-sent to the new owner. ASK:
//   the command is re-sent once to the named node, preceded by ASKING on the same connection.
//   TRYAGAIN and CLUSTERDOWN: re-sent after a short backoff while the command's time allows.
//   These replies prove the command did not run, so a re-send never applies it twice; a command
//   whose connection was lost is never re-sent (it may have run): it fails with Unavailable.
// - Only masters are ever addressed: nothing is read from or written to a replica.
// - A command for a slot nobody is known to serve (the map is not loaded yet) goes to a seed,
//   whose MOVED teaches the map.
// Thread-safe: commands come from any thread; replies are handled on the client's I/O threads.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/cluster_topology.h"
#include "sluice/store/redis/connection.h"
#include "sluice/store/redis/node_pool.h"
#include "sluice/store/redis/refresh_throttle.h"

namespace sluice::redis::internal {

class ClusterRouter {
 public:
  // `fail_later` completes a command that never reached a connection without running its
  // callback inside the submitting call.
  using FailLater = std::function<void(Completion, Status)>;
  ClusterRouter(asio::io_context& io, const MultiplexerOptions& options, Counters& counters,
                FailLater fail_later, asio::ssl::context* tls = nullptr);

  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  // Sends `formatted` to the master of `slot` (any master when nullopt: a keyless command).
  void submit(std::string_view formatted, std::optional<int> slot, ErrorReplies errors,
              Completion done);
  // The engine of the master serving `slot` now. The map may change before the call is sent:
  // a call written for an engine its node lacks falls back (multiplexer.cc).
  ScriptEngine engine_for_slot(std::optional<int> slot);
  // Every known master and its engine, for /metrics and the start log.
  std::vector<std::pair<std::string, ScriptEngine>> engines() const;

  // Stops refreshing and closes every connection (outstanding commands fail with Cancelled).
  void close();

  int ready_connections() const;
  // Masters that serve at least one slot in the current map.
  int masters() const;

 private:
  struct Command;

  NodePool* pool_for_slot(std::optional<int> slot);
  // The pool for `address`, created (and connecting) on first use; null for a new address once
  // the router is closed.
  NodePool* pool_at(const NodeAddress& address);
  void send(const std::shared_ptr<Command>& command, NodePool* pool, bool asking);
  void on_reply(const std::shared_ptr<Command>& command, NodePool* pool, StatusOr<Reply> result);
  void retry_later(const std::shared_ptr<Command>& command);
  void finish(const std::shared_ptr<Command>& command, StatusOr<Reply> result);

  // Starts a map read (refresh_throttle.h decides when).
  void start_refresh();
  // Reads the map from candidates[i], falling back to the next on failure.
  void refresh_from(std::shared_ptr<std::vector<NodePool*>> candidates, std::size_t i,
                    bool use_cluster_slots);
  void install(const std::vector<SlotRange>& ranges);

  asio::io_context& io_;
  const MultiplexerOptions& options_;
  Counters& counters_;
  const FailLater fail_later_;
  asio::ssl::context* const tls_;
  std::vector<NodeAddress> seeds_;

  mutable Mutex pools_mu_;
  std::map<NodeAddress, std::unique_ptr<NodePool>> pools_
      SLUICE_GUARDED_BY(pools_mu_);                         // never erased before close()
  bool pools_closed_ SLUICE_GUARDED_BY(pools_mu_) = false;  // no new pool after close()

  mutable SharedMutex map_mu_;
  std::vector<NodePool*> slot_owner_
      SLUICE_GUARDED_BY(map_mu_);  // kClusterSlots entries; null: unknown

  RefreshThrottle refresh_;
};

}  // namespace sluice::redis::internal
