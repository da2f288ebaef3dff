// PendingBound: the places of the Limiter's max_pending (decisions in flight), shared out so
// that no one client address and no one policy can hold them all (issue 32 M6: one client parking
// 10 200 waits left every other client 503s). A decision takes its places when it enters the
// pipeline and gives them back when it is answered. It counts in:
//   - the total (max_pending);
//   - its client's share (per_client), when the front end names the client (the HTTP peer
//     address); a client is whoever shares one address, so raise the share behind a proxy;
//   - when it was asked with a wait (it may be parked on a retry timer for up to max_wait), the
//     waiting bound (waiting) and its client's and its policy's shares of it (waiting_per_client,
//     waiting_per_policy). Waits hold places for seconds where an answer holds them for a store
//     round trip, so they get their own, smaller room and decisions without a wait always keep
//     `total - waiting` places.
// A request whose places do not fit is refused at once (Limiter::decide answers overloaded():
// HTTP 503 with Retry-After) and changes nothing. Thread-safe; the total is one atomic, the
// client shares are sharded maps, the waiting shares one mutex (waits are the rare path).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/core/mutex.h"
#include "sluice/status.h"

namespace sluice::service {

// The bounds; 0 means "no such bound" for each.
struct PendingBounds {
  std::size_t total = 0;               // decisions in flight
  std::size_t per_client = 0;          // of them from one client
  std::size_t waiting = 0;             // of them asked with a wait
  std::size_t waiting_per_client = 0;  // of the waiting ones from one client
  std::size_t waiting_per_policy = 0;  // of the waiting ones on one policy
};

// `sluice serve`'s rule for shares left at 0 (docs/server.md): each is half of the bound it
// divides — per_client and waiting half of total, waiting_per_client and waiting_per_policy half
// of waiting — so one client or one policy holds at most half, and decisions without a wait keep
// at least half of every place. A total of 0 (no bound) leaves 0 shares unbounded.
PendingBounds with_default_shares(PendingBounds bounds);

// Which bound refused a request.
enum class PendingRefusal : std::uint8_t {
  kTotal,
  kClient,
  kWaiting,
  kWaitingClient,
  kWaitingPolicy,
};

// "overloaded: ..." naming the bound (the setting) and its size: Unavailable with detail
// kOverloaded (is_overloaded()).
Status pending_refused(PendingRefusal refusal, const PendingBounds& bounds);

class PendingBound {
 public:
  // `pending` counts the places taken in total (the gauge DecisionMetrics exports); it must
  // outlive this object.
  PendingBound(PendingBounds bounds, std::atomic<std::size_t>& pending);

  // What one request holds; give it back exactly once.
  struct Claim {
    std::string client;  // empty: counted in the totals only
    std::string policy;  // counted only when waiting
    std::size_t count = 0;
    bool waiting = false;
  };

  // Takes `claim.count` places for `claim`, all or none. nullopt: taken; else the bound that
  // refused (nothing taken).
  std::optional<PendingRefusal> take(const Claim& claim);
  // Gives back what take() took for `claim`.
  void give_back(const Claim& claim);

  const PendingBounds& bounds() const { return bounds_; }
  // Places held by `client` (all, and waiting); for tests and metrics.
  std::size_t held_by(std::string_view client) const;
  std::size_t waiting() const;

 private:
  // Client counts, sharded by the client's hash so I/O threads rarely meet on one mutex.
  struct Shard {
    mutable Mutex mutex;
    std::unordered_map<std::string, std::size_t> counts
        SLUICE_GUARDED_BY(mutex);  // guarded by mutex; no zero entries
  };
  static constexpr std::size_t kShards = 16;
  Shard& shard(std::string_view client) const;
  bool take_total(std::size_t count);
  void give_back_total(std::size_t count);
  bool take_client(std::string_view client, std::size_t count);
  void give_back_client(std::string_view client, std::size_t count);
  std::optional<PendingRefusal> take_waiting(const Claim& claim);
  void give_back_waiting(const Claim& claim);

  const PendingBounds bounds_;
  std::atomic<std::size_t>& pending_;
  mutable std::array<Shard, kShards> shards_;
  mutable Mutex waiting_mutex_;
  std::size_t waiting_ SLUICE_GUARDED_BY(waiting_mutex_) = 0;  // guarded by waiting_mutex_
  std::unordered_map<std::string, std::size_t> waiting_clients_
      SLUICE_GUARDED_BY(waiting_mutex_);  // guarded by waiting_mutex_
  std::unordered_map<std::string, std::size_t> waiting_policies_
      SLUICE_GUARDED_BY(waiting_mutex_);  // guarded by waiting_mutex_
};

}  // namespace sluice::service
