#include "sluice/service/circuit_breaker.h"

#include "sluice/core/mutex.h"

namespace sluice::service {

CircuitBreaker::CircuitBreaker(CircuitBreakerOptions options, DefenceMetrics& metrics)
    : options_(options), metrics_(metrics) {}

void CircuitBreaker::enter(BreakerState state) {
  state_.store(state, std::memory_order_release);
  metrics_.record_breaker_transition(state);
}

CircuitBreaker::Admission CircuitBreaker::admit(Micros now) {
  if (state_.load(std::memory_order_acquire) == BreakerState::kClosed) return Admission::kPass;
  MutexLock lock(mutex_);
  switch (state_.load(std::memory_order_relaxed)) {
    case BreakerState::kClosed:
      return Admission::kPass;
    case BreakerState::kOpen:
      if (now >= opened_at_ + options_.open_for) {
        enter(BreakerState::kHalfOpen);
        return Admission::kProbe;
      }
      break;
    case BreakerState::kHalfOpen:
      break;  // the probe is out: everyone else waits for its answer
  }
  metrics_.record_breaker_rejection();
  return Admission::kRefuse;
}

void CircuitBreaker::record(Outcome outcome, Admission admitted, Micros now) {
  if (options_.failure_threshold <= 0 || admitted == Admission::kRefuse) return;
  const bool outage = outcome == Outcome::kOutage;
  if (admitted == Admission::kPass) {
    if (!outage) {
      if (failures_.load(std::memory_order_relaxed) != 0) failures_.store(0);
      return;
    }
    if (failures_.fetch_add(1) + 1 < options_.failure_threshold) return;
    MutexLock lock(mutex_);
    // Calls admitted before it opened may answer later: only the closed breaker opens here.
    if (state_.load(std::memory_order_relaxed) != BreakerState::kClosed) return;
    opened_at_ = now;
    failures_.store(0);
    enter(BreakerState::kOpen);
    return;
  }
  MutexLock lock(mutex_);
  if (state_.load(std::memory_order_relaxed) != BreakerState::kHalfOpen) return;
  if (outage) {
    opened_at_ = now;
    enter(BreakerState::kOpen);
  } else {
    failures_.store(0);
    enter(BreakerState::kClosed);
  }
}

}  // namespace sluice::service
