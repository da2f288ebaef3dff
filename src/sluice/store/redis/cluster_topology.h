// What a Redis Cluster client learns from the cluster, as values: which master serves which slots
// (from CLUSTER SHARDS, or CLUSTER SLOTS on servers before 7.0), and where a MOVED or ASK error
// reply sends a command. Pure functions; the client (client.cc) keeps the map and acts on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/store/redis/redis_url.h"
#include "sluice/store/redis/resp.h"

namespace sluice::redis {

// Slots first..last (inclusive) and the master that serves them.
struct SlotRange {
  int first = 0;
  int last = 0;
  NodeAddress master;
};

// The ranges of a CLUSTER SHARDS reply (Redis 7+): per shard a map with "slots" (pairs of
// bounds) and "nodes" (maps with "endpoint", "ip", "port", "role", …); the node whose role is
// "master" serves the shard's slots. A master's endpoint "?" or "" (unknown, or announced as
// such) falls back to its "ip"; an empty ip falls back to `asked` (the node that answered), as
// redis-cli does. `tls`: the master's "tls-port" is used when it has one (a node may listen for
// both). Shards without slots (new masters, or replicas only) are skipped.
// InvalidArgument naming what is malformed.
StatusOr<std::vector<SlotRange>> slot_ranges_from_shards(const Reply& reply,
                                                         const NodeAddress& asked,
                                                         bool tls = false);

// The ranges of a CLUSTER SLOTS reply: per range [first, last, [host, port, id…], replicas…]
// (Redis gives the TLS port there when the asking connection is TLS).
StatusOr<std::vector<SlotRange>> slot_ranges_from_slots(const Reply& reply,
                                                        const NodeAddress& asked);

// A cluster redirection: "MOVED <slot> <host>:<port>" (the slot lives there now: update the map)
// or "ASK <slot> <host>:<port>" (this one command goes there, after ASKING, while the slot
// migrates). An empty host means "the node you asked" (Redis sends ":port" when it does not know
// its own address): it is left empty for the caller to fill in.
struct Redirection {
  enum class Kind : std::uint8_t { kMoved, kAsk };
  Kind kind = Kind::kMoved;
  int slot = 0;
  NodeAddress to;
};

// The redirection an error reply's message carries; nullopt for any other error.
std::optional<Redirection> parse_redirection(std::string_view error);

// Whether an error reply means "the cluster cannot serve this now, the command did not run; try
// again shortly": TRYAGAIN (a multi-key command during a slot migration) and CLUSTERDOWN.
bool is_retryable_cluster_error(std::string_view error);

}  // namespace sluice::redis
