// fixed_window, sliding_window and sliding_log: counting algorithms over time windows.
// Same four functions as token_bucket.h. A clock that steps back is treated as standing still
// at the latest instant the state has seen, so going backwards never creates capacity.
#pragma once

#include <cstdint>

#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

WindowState initial_state(const FixedWindow& params, Micros now);
Verdict decide(const FixedWindow& params, const WindowState& state, std::int64_t cost, Micros now);
void commit(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now);
Micros expires_at(const FixedWindow& params, const WindowState& state);

// Admits when previous * (window - elapsed) + (current + cost) * window <= limit * window, all
// in integers. retry_after is exact for this estimate (not for the true sliding count).
SlidingWindowState initial_state(const SlidingWindow& params, Micros now);
Verdict decide(const SlidingWindow& params, const SlidingWindowState& state, std::int64_t cost,
               Micros now);
void commit(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost, Micros now);
Micros expires_at(const SlidingWindow& params, const SlidingWindowState& state);

SlidingLogState initial_state(const SlidingLog& params, Micros now);
Verdict decide(const SlidingLog& params, const SlidingLogState& state, std::int64_t cost,
               Micros now);
void commit(const SlidingLog& params, SlidingLogState& state, std::int64_t cost, Micros now);
Micros expires_at(const SlidingLog& params, const SlidingLogState& state);

}  // namespace sluice::algorithm
