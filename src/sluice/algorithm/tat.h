// Exact arithmetic on theoretical arrival times (TatState): instants of the form
// tat + fraction/rate µs, advanced by whole emission intervals of period/rate µs.
// Shared by gcra, smooth token_bucket and leaky_bucket.
#pragma once

#include <cstdint>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/state.h"
#include "sluice/time.h"

namespace sluice::algorithm {

struct Pace {
  std::int64_t rate = 0;  // units per period, >= 1
  Micros period = 0;      // >= 1
};

// max(state, now): a TAT in the past means "idle", which is the same as now.
constexpr TatState tat_not_before(const TatState& state, Micros now) {
  return state.tat >= now ? state : TatState{.tat = now, .fraction = 0};
}

// state + units * period / rate, exactly. Precondition: units * period fits in int64.
constexpr TatState tat_advance(const TatState& state, std::int64_t units, const Pace& pace) {
  const std::int64_t total = state.fraction + units * pace.period;
  return {.tat = state.tat + total / pace.rate, .fraction = total % pace.rate};
}

// (state - now) * rate: how far ahead of now the TAT is, in µs scaled by rate (exact).
constexpr Int128 tat_scaled_ahead(const TatState& state, Micros now, std::int64_t rate) {
  return static_cast<Int128>(state.tat - now) * rate + state.fraction;
}

// The first whole microsecond at or after the TAT.
constexpr Micros tat_ceil(const TatState& state) {
  return state.tat + (state.fraction > 0 ? 1 : 0);
}

}  // namespace sluice::algorithm
