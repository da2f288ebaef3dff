// ConnectionCount and longest_idle: how the HTTP and gRPC servers hold their connection caps —
// open connections counted in total and per client address, and, at a cap, the connection that
// makes room for a new one (the one idle longest; of the same address when that address is at its
// own cap).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "sluice/core/mutex.h"

namespace sluice::server {

// Open connections of one server. Thread-safe.
class ConnectionCount {
 public:
  void opened(const std::string& peer);
  void closed(const std::string& peer);
  std::size_t total() const { return total_.load(); }
  std::size_t from(const std::string& peer) const;

 private:
  std::atomic<std::size_t> total_{0};
  mutable Mutex mutex_;
  std::unordered_map<std::string, std::size_t> peers_
      SLUICE_GUARDED_BY(mutex_);  // guarded by mutex_: open per address
};

// Of `connections` (pointers to objects with idle(), idle_since() and peer()), the idle one idle
// longest — only among those from `peer` when `same_peer` — or nullptr when none is idle.
template <typename Connections>
auto longest_idle(const Connections& connections, const std::string& peer, bool same_peer) ->
    typename Connections::value_type {
  typename Connections::value_type longest = nullptr;
  for (const auto& connection : connections) {
    if (!connection->idle() || (same_peer && connection->peer() != peer)) continue;
    if (longest == nullptr || connection->idle_since() < longest->idle_since()) {
      longest = connection;
    }
  }
  return longest;
}

// The connection caps of one server: open connections counted in total and per address, the
// bounds, and how many new connections they refused or made room for. Thread-safe.
class ConnectionCaps {
 public:
  // `max_total` 0: the server's share of the descriptors, `descriptor_share`; `max_per_peer` 0:
  // half of the total (at least 1).
  void set(std::size_t max_total, std::size_t max_per_peer, std::size_t descriptor_share) {
    max_total_ = max_total != 0 ? max_total : descriptor_share;
    max_per_peer_ = max_per_peer != 0 ? max_per_peer : std::max<std::size_t>(1, max_total_ / 2);
  }

  // Whether a new connection from `peer` may open: at a cap, room is made by closing the
  // connection idle longest among `connections` (this I/O thread's; of `peer` only, when only its
  // own cap is reached), else it is refused. Threads check the counts apart, so a cap can be
  // passed by at most one per I/O thread.
  template <typename Connections>
  bool admit(const Connections& connections, const std::string& peer) {
    const bool over_total = open_.total() >= max_total_;
    const bool over_peer = open_.from(peer) >= max_per_peer_;
    if (!over_total && !over_peer) return true;
    const auto idle = longest_idle(connections, peer, over_peer);
    if (idle == nullptr) {
      refused_.fetch_add(1);
      return false;
    }
    idle->close();
    evicted_.fetch_add(1);
    return true;
  }

  void opened(const std::string& peer) { open_.opened(peer); }
  void closed(const std::string& peer) { open_.closed(peer); }
  std::size_t open() const { return open_.total(); }
  std::size_t max_total() const { return max_total_; }
  std::size_t max_per_peer() const { return max_per_peer_; }
  std::uint64_t evicted() const { return evicted_.load(); }
  std::uint64_t refused() const { return refused_.load(); }

 private:
  ConnectionCount open_;
  std::size_t max_total_ = 0;  // set before the server accepts, read-only after
  std::size_t max_per_peer_ = 0;
  std::atomic<std::uint64_t> evicted_{0};  // idle connections closed to admit a new one
  std::atomic<std::uint64_t> refused_{0};  // new connections closed with none idle to replace
};

}  // namespace sluice::server
