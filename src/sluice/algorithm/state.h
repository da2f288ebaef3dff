// Per-limit state of one subject, one struct per algorithm family. Values only: stores persist
// them (memory) or mirror them in Redis keys with the same meaning.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "sluice/time.h"

namespace sluice::algorithm {

// A theoretical arrival time with sub-microsecond precision: exactly tat + fraction / rate µs,
// 0 <= fraction < rate. Used by gcra, smooth token_bucket and leaky_bucket so an emission
// interval period/rate that is not a whole number of microseconds never drifts.
struct TatState {
  Micros tat = 0;
  std::int64_t fraction = 0;
  friend bool operator==(const TatState&, const TatState&) = default;
};

// Interval token bucket: tokens held and the instant the refill clock last ticked. While the
// bucket is full the clock is idle: `refilled_at` restarts at the first request that finds it full.
struct IntervalBucketState {
  std::int64_t tokens = 0;
  Micros refilled_at = 0;
  friend bool operator==(const IntervalBucketState&, const IntervalBucketState&) = default;
};

// Fixed window: which window (its start) and the units counted in it.
struct WindowState {
  Micros window_start = 0;
  std::int64_t count = 0;
  friend bool operator==(const WindowState&, const WindowState&) = default;
};

// Sliding window: counts of the window starting at `window_start` and of the one before it.
struct SlidingWindowState {
  Micros window_start = 0;
  std::int64_t current = 0;
  std::int64_t previous = 0;
  friend bool operator==(const SlidingWindowState&, const SlidingWindowState&) = default;
};

struct LogEntry {
  Micros at = 0;
  std::int64_t cost = 0;
  friend bool operator==(const LogEntry&, const LogEntry&) = default;
};

// Sliding log: admitted requests, oldest first. Never more entries than the limit.
struct SlidingLogState {
  std::vector<LogEntry> entries;
  friend bool operator==(const SlidingLogState&, const SlidingLogState&) = default;
};

struct Lease {
  std::string id;
  Micros expires_at = 0;
  std::int64_t cost = 0;
  friend bool operator==(const Lease&, const Lease&) = default;
};

// Concurrency: live leases in acquisition order.
struct ConcurrencyState {
  std::vector<Lease> leases;
  friend bool operator==(const ConcurrencyState&, const ConcurrencyState&) = default;
};

using LimitState = std::variant<TatState, IntervalBucketState, WindowState, SlidingWindowState,
                                SlidingLogState, ConcurrencyState>;

// The parts of a state that own heap growing with use (catalogue.h `state_grows`): a sliding
// log's entries and a concurrency limit's leases; nullptr for every other state.
inline const std::vector<LogEntry>* log_entries(const LimitState& state) {
  const auto* log = std::get_if<SlidingLogState>(&state);
  return log != nullptr ? &log->entries : nullptr;
}
inline const std::vector<Lease>* held_leases(const LimitState& state) {
  const auto* held = std::get_if<ConcurrencyState>(&state);
  return held != nullptr ? &held->leases : nullptr;
}

}  // namespace sluice::algorithm
