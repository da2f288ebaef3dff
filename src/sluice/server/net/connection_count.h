// ConnectionCount and longest_idle: how the HTTP and gRPC servers hold their connection caps —
// open connections counted in total and per client address, and, at a cap, the connection that
// makes room for a new one (the one idle longest; of the same address when that address is at its
// own cap).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

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
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::size_t> peers_;  // guarded by mutex_: open per address
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

// What a cap makes of a new connection.
enum class Admission { kAdmitted, kAdmittedAfterEviction, kRefused };

// Whether a new connection from `peer` may open under the caps — `max_total` open connections in
// all, `max_per_peer` from one address — making room at a cap by closing the connection idle
// longest among `connections` (this I/O thread's; of `peer` only, when only its own cap is
// reached). Threads check the counts apart, so a cap can be passed by at most one per I/O thread.
template <typename Connections>
Admission admit(const ConnectionCount& open, std::size_t max_total, std::size_t max_per_peer,
                const Connections& connections, const std::string& peer) {
  const bool over_total = open.total() >= max_total;
  const bool over_peer = open.from(peer) >= max_per_peer;
  if (!over_total && !over_peer) return Admission::kAdmitted;
  const auto idle = longest_idle(connections, peer, over_peer);
  if (idle == nullptr) return Admission::kRefused;
  idle->close();
  return Admission::kAdmittedAfterEviction;
}

}  // namespace sluice::server
