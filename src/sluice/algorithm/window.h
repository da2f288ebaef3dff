// fixed_window, sliding_window and sliding_log: counting algorithms over time windows.
// Same four functions as token_bucket.h. A clock that steps back is treated as standing still
// at the latest instant the state has seen, so going backwards never creates capacity.
#pragma once

#include <cstdint>

#include "sluice/algorithm/charge.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

// The fixed window's decision once its window is known: `count` units counted in a window ending
// at `window_end` (> now), `limit` per window, denials counted or not. Stores whose windows come
// from elsewhere (the Redis module's calendar windows, whose bounds the client computes) decide
// with it too.
Verdict decide_window_count(std::int64_t limit, std::int64_t count, Micros window_end,
                            std::int64_t cost, Micros now,
                            DeniedCost denied_cost = DeniedCost::kFree);

WindowState initial_state(const FixedWindow& params, Micros now);
Verdict decide(const FixedWindow& params, const WindowState& state, std::int64_t cost, Micros now);
void commit(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now);
// An acquire of `cost` this window denied: counted (true) when the window counts denials
// (DeniedCost::kCounted), else nothing changes (false). Decide's verdict for that denial already
// reports the counted state (remaining 0, reset at the window's end).
bool commit_denied(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now);
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

// Quota operations (token_bucket.h lists them): a charge counts its cost like an admitted request
// (the counters move, or the log gains an entry) when the balance after stays >= -max_debt, the
// admission test of a limit max_debt larger. A refund un-counts units: the fixed window's count
// (not below 0); the sliding window's current count, then its previous one; the sliding log's
// newest entries first.
std::int64_t balance(const FixedWindow& params, const WindowState& state, Micros now);
ChargeFit charge_fit(const FixedWindow& params, const WindowState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now);

// The balance is the estimate's room, rounded down: floor((limit·window - previous·(window -
// elapsed)) / window) - current.
std::int64_t balance(const SlidingWindow& params, const SlidingWindowState& state, Micros now);
ChargeFit charge_fit(const SlidingWindow& params, const SlidingWindowState& state,
                     std::int64_t cost, std::int64_t max_debt, Micros now);
void refund(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost, Micros now);

std::int64_t balance(const SlidingLog& params, const SlidingLogState& state, Micros now);
ChargeFit charge_fit(const SlidingLog& params, const SlidingLogState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now);
void refund(const SlidingLog& params, SlidingLogState& state, std::int64_t cost, Micros now);

// A settle's refund (quota.h settle_refund): gives back `cost` units of a charge counted at
// `charged_at`, only into the window that counted it, so units charged in one window never become
// budget in a later one. Fixed window: only while the window holding `charged_at` is the current
// one. Sliding window: from `current` when `charged_at` is in the current window, from `previous`
// when it is in the one before, else nothing. Sliding log: only the entries at instant
// `charged_at` still inside the window. Each count stops at 0.
void refund_charged_at(const FixedWindow& params, WindowState& state, std::int64_t cost,
                       Micros charged_at, Micros now);
void refund_charged_at(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost,
                       Micros charged_at, Micros now);
void refund_charged_at(const SlidingLog& params, SlidingLogState& state, std::int64_t cost,
                       Micros charged_at, Micros now);

}  // namespace sluice::algorithm
