#include "sluice/algorithm/window.h"

#include <algorithm>
#include <numeric>

#include "sluice/algorithm/arithmetic.h"

namespace sluice::algorithm {
namespace {

Micros window_start_of(Micros now, Micros window) { return floor_div(now, window) * window; }

// ---- fixed_window ----

// Where the window holding `now` starts: aligned to the epoch, or a calendar period's start.
Micros fixed_start_of(const FixedWindow& p, Micros now) {
  if (p.calendar) return calendar_period(*p.calendar, now).start;
  return window_start_of(now, p.window);
}

// Where the window starting at `start` ends.
Micros fixed_end_of(const FixedWindow& p, Micros start) {
  if (p.calendar) return calendar_period(*p.calendar, start).end;
  return start + p.window;
}

// The state as seen at `now`: a later window starts empty; an earlier `now` (clock stepped back)
// keeps the stored window.
WindowState fixed_at(const FixedWindow& p, const WindowState& state, Micros now) {
  const Micros start = fixed_start_of(p, now);
  if (start > state.window_start) return {.window_start = start, .count = 0};
  return state;
}

// ---- sliding_window ----

struct SlidingView {
  SlidingWindowState counts;  // rolled forward to the window containing `now`
  Micros elapsed;             // since counts.window_start, in [0, window)
};

SlidingView sliding_at(const SlidingWindow& p, const SlidingWindowState& state, Micros now) {
  const Micros start = window_start_of(now, p.window);
  if (start < state.window_start) return {.counts = state, .elapsed = 0};
  if (start == state.window_start) return {.counts = state, .elapsed = now - start};
  const std::int64_t previous = start - p.window == state.window_start ? state.current : 0;
  return {.counts = {.window_start = start, .current = 0, .previous = previous},
          .elapsed = now - start};
}

// previous * (window - elapsed) + (current + cost) * window <= limit * window, rearranged so no
// product exceeds limit * window (< 2^53 by validation).
bool sliding_admits(std::int64_t limit, Micros window, std::int64_t previous, std::int64_t current,
                    Micros elapsed, std::int64_t cost) {
  const std::int64_t room = limit - current - cost;
  if (room < 0) return false;
  return previous * (window - elapsed) <= room * window;
}

// Earliest elapsed time e in a window with counts (previous, current) at which `cost` fits:
// previous * (window - e) <= (limit - current - cost) * window. `window` when none does.
Micros sliding_first_fit(std::int64_t limit, Micros window, std::int64_t previous,
                         std::int64_t current, std::int64_t cost) {
  const std::int64_t room = limit - current - cost;
  if (room < 0) return window;
  if (previous == 0) return 0;
  return std::max<Micros>(0, window - room * window / previous);
}

std::int64_t sliding_remaining(const SlidingWindow& p, const SlidingView& v) {
  const std::int64_t weighted_previous = v.counts.previous * (p.window - v.elapsed);
  const std::int64_t capacity = (p.limit * p.window - weighted_previous) / p.window;
  return std::max<std::int64_t>(0, capacity - v.counts.current);
}

Micros sliding_reset_at(const SlidingWindow& p, const SlidingWindowState& counts) {
  if (counts.current > 0) return counts.window_start + 2 * p.window;
  if (counts.previous > 0) return counts.window_start + p.window;
  return counts.window_start;
}

// ---- sliding_log ----

// Entries still inside (now - window, now], with `now` never earlier than the newest entry.
struct LogView {
  Micros now;
  std::size_t first_live;  // index of the oldest entry inside the window
  std::int64_t used;       // their summed cost
};

LogView log_at(const SlidingLog& p, const SlidingLogState& state, Micros now) {
  LogView view{.now = now, .first_live = 0, .used = 0};
  if (!state.entries.empty()) view.now = std::max(now, state.entries.back().at);
  const auto& entries = state.entries;
  while (view.first_live < entries.size() && entries[view.first_live].at <= view.now - p.window) {
    ++view.first_live;
  }
  for (std::size_t i = view.first_live; i < entries.size(); ++i) view.used += entries[i].cost;
  return view;
}

}  // namespace

WindowState initial_state(const FixedWindow& params, Micros now) {
  return {.window_start = fixed_start_of(params, now), .count = 0};
}

Verdict decide_window_count(std::int64_t limit, std::int64_t count, Micros window_end,
                            std::int64_t cost, Micros now, DeniedCost denied_cost) {
  Verdict verdict{.limit = limit};
  // A counting window reports its end in every verdict, empty or not, as envoyproxy/ratelimit
  // reports the time to the end of the unit for every limited descriptor.
  const bool counting = denied_cost == DeniedCost::kCounted;
  if (count + cost <= limit) {
    verdict.allowed = true;
    verdict.remaining = limit - count - cost;
    verdict.reset_after = count + cost > 0 || counting ? window_end - now : 0;
    return verdict;
  }
  if (counting) {
    // The denied cost is counted (commit_denied): nothing remains.
    verdict.remaining = 0;
    verdict.reset_after = window_end - now;
  } else {
    verdict.remaining = std::max<std::int64_t>(0, limit - count);  // debt: quota.h
    // An empty window (only a cost above the limit is denied there) has nothing to reset.
    verdict.reset_after = count > 0 ? window_end - now : 0;
  }
  if (cost <= limit) verdict.retry_after = window_end - now;
  return verdict;
}

Verdict decide(const FixedWindow& params, const WindowState& state, std::int64_t cost, Micros now) {
  const WindowState current = fixed_at(params, state, now);
  return decide_window_count(params.limit, current.count,
                             fixed_end_of(params, current.window_start), cost, now,
                             params.denied_cost);
}

void commit(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now) {
  state = fixed_at(params, state, now);
  state.count += cost;
}

bool commit_denied(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now) {
  if (params.denied_cost != DeniedCost::kCounted || cost == 0) return false;
  commit(params, state, cost, now);
  return true;
}

Micros expires_at(const FixedWindow& params, const WindowState& state) {
  return fixed_end_of(params, state.window_start);
}

SlidingWindowState initial_state(const SlidingWindow& params, Micros now) {
  return {.window_start = window_start_of(now, params.window), .current = 0, .previous = 0};
}

Verdict decide(const SlidingWindow& params, const SlidingWindowState& state, std::int64_t cost,
               Micros now) {
  const SlidingView view = sliding_at(params, state, now);
  const auto& [start, current, previous] = view.counts;
  Verdict verdict{.limit = params.limit};
  if (sliding_admits(params.limit, params.window, previous, current, view.elapsed, cost)) {
    SlidingView after = view;
    after.counts.current += cost;
    verdict.allowed = true;
    verdict.remaining = sliding_remaining(params, after);
    verdict.reset_after = std::max<Micros>(0, sliding_reset_at(params, after.counts) - now);
    return verdict;
  }
  verdict.remaining = sliding_remaining(params, view);
  verdict.reset_after = std::max<Micros>(0, sliding_reset_at(params, view.counts) - now);
  if (cost > params.limit) return verdict;  // never
  // The estimate only falls as time passes; find the first instant it admits `cost`: later in
  // this window, else in the next one (where `current` becomes `previous`), else after both.
  Micros allowed_at = start + 2 * params.window;
  const Micros this_window =
      sliding_first_fit(params.limit, params.window, previous, current, cost);
  const Micros next_window = sliding_first_fit(params.limit, params.window, current, 0, cost);
  if (this_window < params.window) {
    allowed_at = start + this_window;
  } else if (next_window < params.window) {
    allowed_at = start + params.window + next_window;
  }
  verdict.retry_after = std::max<Micros>(allowed_at, now + 1) - now;
  return verdict;
}

void commit(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost, Micros now) {
  state = sliding_at(params, state, now).counts;
  state.current += cost;
}

Micros expires_at(const SlidingWindow& params, const SlidingWindowState& state) {
  return sliding_reset_at(params, state);
}

SlidingLogState initial_state(const SlidingLog& /*params*/, Micros /*now*/) { return {}; }

Verdict decide(const SlidingLog& params, const SlidingLogState& state, std::int64_t cost,
               Micros now) {
  const LogView view = log_at(params, state, now);
  Verdict verdict{.limit = params.limit};
  const bool has_live = view.first_live < state.entries.size();
  if (view.used + cost <= params.limit) {
    verdict.allowed = true;
    verdict.remaining = params.limit - view.used - cost;
    if (cost > 0) {
      verdict.reset_after = view.now + params.window - now;
    } else if (has_live) {
      verdict.reset_after = state.entries.back().at + params.window - now;
    }
    return verdict;
  }
  verdict.remaining = std::max<std::int64_t>(0, params.limit - view.used);  // debt: quota.h
  if (has_live) verdict.reset_after = state.entries.back().at + params.window - now;
  if (cost > params.limit) return verdict;  // never
  // Entries leave the window oldest first; wait until enough cost has left.
  std::int64_t excess = view.used + cost - params.limit;
  for (std::size_t i = view.first_live; i < state.entries.size(); ++i) {
    excess -= state.entries[i].cost;
    if (excess <= 0) {
      verdict.retry_after = state.entries[i].at + params.window - now;
      break;
    }
  }
  return verdict;
}

void commit(const SlidingLog& params, SlidingLogState& state, std::int64_t cost, Micros now) {
  const LogView view = log_at(params, state, now);
  state.entries.erase(state.entries.begin(),
                      state.entries.begin() + static_cast<std::ptrdiff_t>(view.first_live));
  state.entries.push_back({.at = view.now, .cost = cost});
}

Micros expires_at(const SlidingLog& params, const SlidingLogState& state) {
  return state.entries.empty() ? 0 : state.entries.back().at + params.window;
}

// ---- quota operations ----

namespace {

// A fit from the verdict of a limit max_debt larger (the same admission test, exact retry).
ChargeFit fit_of(const Verdict& verdict) {
  return {.fits = verdict.allowed, .retry_after = verdict.retry_after};
}

}  // namespace

std::int64_t balance(const FixedWindow& params, const WindowState& state, Micros now) {
  return params.limit - fixed_at(params, state, now).count;
}

ChargeFit charge_fit(const FixedWindow& params, const WindowState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  FixedWindow larger = params;  // the calendar, if any, too
  larger.limit += max_debt;
  return fit_of(decide(larger, state, cost, now));
}

void refund(const FixedWindow& params, WindowState& state, std::int64_t cost, Micros now) {
  state = fixed_at(params, state, now);
  state.count = std::max<std::int64_t>(0, state.count - cost);
}

std::int64_t balance(const SlidingWindow& params, const SlidingWindowState& state, Micros now) {
  const SlidingView view = sliding_at(params, state, now);
  const std::int64_t weighted_previous = view.counts.previous * (params.window - view.elapsed);
  return floor_div(params.limit * params.window - weighted_previous, params.window) -
         view.counts.current;
}

ChargeFit charge_fit(const SlidingWindow& params, const SlidingWindowState& state,
                     std::int64_t cost, std::int64_t max_debt, Micros now) {
  const SlidingWindow larger{.limit = params.limit + max_debt, .window = params.window};
  return fit_of(decide(larger, state, cost, now));
}

void refund(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost, Micros now) {
  state = sliding_at(params, state, now).counts;
  const std::int64_t from_current = std::min(cost, state.current);
  state.current -= from_current;
  state.previous = std::max<std::int64_t>(0, state.previous - (cost - from_current));
}

std::int64_t balance(const SlidingLog& params, const SlidingLogState& state, Micros now) {
  return params.limit - log_at(params, state, now).used;
}

ChargeFit charge_fit(const SlidingLog& params, const SlidingLogState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  const SlidingLog larger{.limit = params.limit + max_debt, .window = params.window};
  return fit_of(decide(larger, state, cost, now));
}

void refund(const SlidingLog& params, SlidingLogState& state, std::int64_t cost, Micros now) {
  const LogView view = log_at(params, state, now);
  state.entries.erase(state.entries.begin(),
                      state.entries.begin() + static_cast<std::ptrdiff_t>(view.first_live));
  while (cost > 0 && !state.entries.empty()) {
    LogEntry& newest = state.entries.back();
    const std::int64_t taken = std::min(cost, newest.cost);
    newest.cost -= taken;
    cost -= taken;
    if (newest.cost == 0) state.entries.pop_back();
  }
}

void refund_charged_at(const FixedWindow& params, WindowState& state, std::int64_t cost,
                       Micros charged_at, Micros now) {
  state = fixed_at(params, state, now);
  if (fixed_start_of(params, charged_at) != state.window_start) return;  // counted elsewhere
  state.count = std::max<std::int64_t>(0, state.count - cost);
}

void refund_charged_at(const SlidingWindow& params, SlidingWindowState& state, std::int64_t cost,
                       Micros charged_at, Micros now) {
  state = sliding_at(params, state, now).counts;
  const Micros charged_in = window_start_of(charged_at, params.window);
  if (charged_in == state.window_start) {
    state.current = std::max<std::int64_t>(0, state.current - cost);
  } else if (charged_in == state.window_start - params.window) {
    state.previous = std::max<std::int64_t>(0, state.previous - cost);
  }
}

void refund_charged_at(const SlidingLog& params, SlidingLogState& state, std::int64_t cost,
                       Micros charged_at, Micros now) {
  const LogView view = log_at(params, state, now);
  auto& entries = state.entries;
  entries.erase(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(view.first_live));
  if (charged_at <= view.now - params.window) return;  // its entries have left the window
  // Entries are in time order: those at `charged_at`, newest first.
  for (std::size_t i = entries.size(); i-- > 0 && cost > 0;) {
    if (entries[i].at < charged_at) break;
    if (entries[i].at != charged_at) continue;
    const std::int64_t taken = std::min(cost, entries[i].cost);
    entries[i].cost -= taken;
    cost -= taken;
    if (entries[i].cost == 0) entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

}  // namespace sluice::algorithm
