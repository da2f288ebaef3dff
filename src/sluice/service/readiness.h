// Readiness: whether this node can decide — its store answers one cost-0 peek (a real round trip
// that changes nothing) and, when it has one, its policy database answers. The one check behind
// both GET /readyz (server/http/decision_api.cc) and grpc.health.v1 (app/server.cc's prober).
#pragma once

#include <functional>

#include "sluice/status.h"
#include "sluice/store/store.h"
#include "sluice/time.h"

namespace sluice::service {

class Readiness {
 public:
  // `store` outlives the check. `policies_ready` (may be empty: no policy database) blocks.
  explicit Readiness(store::DecisionPort& store, std::function<Status()> policies_ready = {});

  // The store's part: `done(status, latency µs)` runs once, wherever the store answers (its I/O
  // thread, or inside the call for the memory store); it must not block.
  void check_store(std::function<void(const Status&, Micros)> done) const;
  // Whether there is a policy database to ask.
  bool has_policies() const { return static_cast<bool>(policies_ready_); }
  // The policy database's part (OK when there is none). Blocks: not on an I/O thread.
  Status check_policies() const;
  // Both parts, the store first; blocks. For a prober thread of its own.
  Status check() const;

 private:
  store::DecisionPort& store_;
  std::function<Status()> policies_ready_;
};

}  // namespace sluice::service
