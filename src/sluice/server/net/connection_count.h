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

}  // namespace sluice::server
