// CircuitBreaker: the circuit breaker on the store (docs/defences.md §2). After
// `failure_threshold` consecutive store outages (is_store_outage: unreachable, timed out,
// overloaded) it opens: decisions go straight to the policy's failure mode, with no store call
// and so no per-request timeout. After `open_for` the next decision is let through as the one
// probe (half-open; the others are still refused): its answer closes the breaker, its outage
// opens it for another `open_for`. Any answer from the store (a decision, or an error that is
// not an outage, such as refused credentials) counts as the store being reachable.
//
// Time is the caller's (steady clock). Transitions and refusals are counted in DefenceMetrics.
// Thread-safe; the closed state's path is two atomic loads.
#pragma once

#include <atomic>
#include <cstdint>

#include "sluice/core/mutex.h"
#include "sluice/service/defence_metrics.h"
#include "sluice/time.h"

namespace sluice::service {

struct CircuitBreakerOptions {
  // Consecutive store outages that open the breaker; 0: it never opens.
  int failure_threshold = 5;
  // How long it stays open before one probe is let through. > 0.
  Micros open_for = kMicrosPerSecond;
};

class CircuitBreaker {
 public:
  CircuitBreaker(CircuitBreakerOptions options, DefenceMetrics& metrics);

  enum class Admission : std::uint8_t {
    kPass,    // closed: ask the store
    kProbe,   // half-open: ask the store; report the answer with probe = true
    kRefuse,  // open: decide by the failure mode, without the store
  };
  // Whether a decision at `now` may ask the store. kRefuse is counted.
  Admission admit(Micros now);

  // How a store call ended, for the breaker: any answer (a decision or an error that is not an
  // outage) shows the store reachable; an outage is one per is_store_outage.
  enum class Outcome : std::uint8_t { kAnswered, kOutage };
  // The outcome of a store call that `admitted` (what admit returned: kPass or kProbe) let
  // through. kRefuse asked nothing and records nothing.
  void record(Outcome outcome, Admission admitted, Micros now);

  BreakerState state() const { return state_.load(std::memory_order_acquire); }

 private:
  void enter(BreakerState state);  // mutex_ held

  const CircuitBreakerOptions options_;
  DefenceMetrics& metrics_;
  Mutex mutex_;
  std::atomic<BreakerState> state_{BreakerState::kClosed};
  std::atomic<int> failures_{0};                    // consecutive outages while closed
  Micros opened_at_ SLUICE_GUARDED_BY(mutex_) = 0;  // mutex_
};

}  // namespace sluice::service
