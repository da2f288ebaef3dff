#include "sluice/algorithm/token_bucket.h"

#include <algorithm>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/tat.h"

namespace sluice::algorithm {
namespace {

// A smooth bucket of `capacity` tokens refilled at pace.rate per pace.period, represented by the
// TAT at which it is full again: tokens(now) = capacity - max(0, TAT - now) / interval.
struct SmoothBucket {
  std::int64_t capacity;
  Pace pace;

  Int128 full_scaled() const { return static_cast<Int128>(capacity) * pace.period; }

  // Whole tokens in the bucket if its TAT is `tat`, at `now`.
  std::int64_t tokens(const TatState& tat, Micros now) const {
    const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(tat, now, pace.rate));
    return saturate(std::max<Int128>(0, floor_div(full_scaled() - ahead, Int128{pace.period})));
  }

  Verdict decide(const TatState& state, std::int64_t cost, Micros now) const {
    Verdict verdict{.limit = capacity};
    const TatState base = tat_not_before(state, now);
    if (cost > capacity) {
      verdict.remaining = tokens(base, now);
      verdict.reset_after = tat_ceil(base) - now;
      return verdict;  // can never be granted: no retry_after
    }
    const TatState next = tat_advance(base, cost, pace);
    if (tat_scaled_ahead(next, now, pace.rate) <= full_scaled()) {
      verdict.allowed = true;
      verdict.remaining = tokens(next, now);
      verdict.reset_after = tat_ceil(next) - now;
      return verdict;
    }
    // Allowed from the first t with TAT + (cost - capacity) * interval <= t.
    const std::int64_t shift = base.fraction + (cost - capacity) * pace.period;
    verdict.remaining = tokens(base, now);
    verdict.reset_after = tat_ceil(base) - now;
    verdict.retry_after = base.tat + ceil_div(shift, pace.rate) - now;
    return verdict;
  }

  void commit(TatState& state, std::int64_t cost, Micros now) const {
    state = tat_advance(tat_not_before(state, now), cost, pace);
  }

  // capacity - (TAT - now) / interval, rounded down and signed: below 0 while in debt.
  std::int64_t balance(const TatState& state, Micros now) const {
    const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(state, now, pace.rate));
    return saturate(floor_div(full_scaled() - ahead, Int128{pace.period}));
  }

  // A charge fits while the TAT it leaves is at most capacity + max_debt intervals ahead: the
  // admission test of a bucket max_debt tokens deeper, whose retry_after is then exact too.
  ChargeFit charge_fit(const TatState& state, std::int64_t cost, std::int64_t max_debt,
                       Micros now) const {
    const SmoothBucket deeper{.capacity = capacity + max_debt, .pace = pace};
    const Verdict verdict = deeper.decide(state, cost, now);
    return {.fits = verdict.allowed, .retry_after = verdict.retry_after};
  }

  // Moves the TAT back by cost intervals, not before now.
  void refund(TatState& state, std::int64_t cost, Micros now) const {
    const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(state, now, pace.rate));
    const Int128 left = std::max<Int128>(0, ahead - Int128{cost} * pace.period);
    state = {.tat = now + static_cast<Micros>(left / pace.rate),
             .fraction = static_cast<std::int64_t>(left % pace.rate)};
  }
};

SmoothBucket smooth(const TokenBucket& p) {
  return {.capacity = p.capacity, .pace = {.rate = p.refill, .period = p.period}};
}

SmoothBucket smooth(const Gcra& p) {
  return {.capacity = p.burst + 1, .pace = {.rate = p.rate, .period = p.period}};
}

// Interval refill: the bucket as it stands at `now`, refills applied. While full the refill
// clock is idle, so a full bucket restarts its clock at `now`.
IntervalBucketState refilled(const TokenBucket& p, const IntervalBucketState& state, Micros now) {
  IntervalBucketState result = state;
  if (now > state.refilled_at && state.tokens < p.capacity) {
    const std::int64_t periods = (now - state.refilled_at) / p.period;
    const std::int64_t needed = ceil_div(p.capacity - state.tokens, p.refill);
    if (periods >= needed) {
      result.tokens = p.capacity;
    } else {
      result.tokens += periods * p.refill;
      result.refilled_at += periods * p.period;
    }
  }
  if (result.tokens >= p.capacity) {
    result.tokens = p.capacity;
    result.refilled_at = std::max(state.refilled_at, now);
  }
  return result;
}

// When the bucket will be full again, for a bucket with refills applied.
Micros interval_full_at(const TokenBucket& p, const IntervalBucketState& s) {
  if (s.tokens >= p.capacity) return s.refilled_at;
  return s.refilled_at + ceil_div(p.capacity - s.tokens, p.refill) * p.period;
}

}  // namespace

LimitState initial_state(const TokenBucket& params, Micros now) {
  const std::int64_t tokens = params.initial.value_or(params.capacity);
  if (params.refill_mode == RefillMode::kInterval) {
    return IntervalBucketState{.tokens = tokens, .refilled_at = now};
  }
  // A bucket holding `tokens` is full again after (capacity - tokens) intervals.
  return tat_advance({.tat = now, .fraction = 0}, params.capacity - tokens,
                     {.rate = params.refill, .period = params.period});
}

Verdict decide(const TokenBucket& params, const TatState& state, std::int64_t cost, Micros now) {
  return smooth(params).decide(state, cost, now);
}

void commit(const TokenBucket& params, TatState& state, std::int64_t cost, Micros now) {
  smooth(params).commit(state, cost, now);
}

Micros expires_at(const TokenBucket& /*params*/, const TatState& state) { return tat_ceil(state); }

Verdict decide(const TokenBucket& params, const IntervalBucketState& state, std::int64_t cost,
               Micros now) {
  const IntervalBucketState current = refilled(params, state, now);
  Verdict verdict{.limit = params.capacity};
  if (cost <= current.tokens) {
    IntervalBucketState after = current;
    after.tokens -= cost;
    verdict.allowed = true;
    verdict.remaining = after.tokens;
    verdict.reset_after = std::max<Micros>(0, interval_full_at(params, after) - now);
    return verdict;
  }
  verdict.remaining = std::max<std::int64_t>(0, current.tokens);  // < 0 in debt (quota.h)
  verdict.reset_after = std::max<Micros>(0, interval_full_at(params, current) - now);
  if (cost <= params.capacity) {
    const std::int64_t refills = ceil_div(cost - current.tokens, params.refill);
    verdict.retry_after = current.refilled_at + refills * params.period - now;
  }
  return verdict;
}

void commit(const TokenBucket& params, IntervalBucketState& state, std::int64_t cost, Micros now) {
  state = refilled(params, state, now);
  state.tokens -= cost;
}

Micros expires_at(const TokenBucket& params, const IntervalBucketState& state) {
  return interval_full_at(params, state);
}

TatState initial_state(const Gcra& /*params*/, Micros now) { return {.tat = now, .fraction = 0}; }

Verdict decide(const Gcra& params, const TatState& state, std::int64_t cost, Micros now) {
  return smooth(params).decide(state, cost, now);
}

void commit(const Gcra& params, TatState& state, std::int64_t cost, Micros now) {
  smooth(params).commit(state, cost, now);
}

Micros expires_at(const Gcra& /*params*/, const TatState& state) { return tat_ceil(state); }

std::int64_t balance(const TokenBucket& params, const TatState& state, Micros now) {
  return smooth(params).balance(state, now);
}

ChargeFit charge_fit(const TokenBucket& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  return smooth(params).charge_fit(state, cost, max_debt, now);
}

void refund(const TokenBucket& params, TatState& state, std::int64_t cost, Micros now) {
  smooth(params).refund(state, cost, now);
}

std::int64_t balance(const TokenBucket& params, const IntervalBucketState& state, Micros now) {
  return refilled(params, state, now).tokens;
}

ChargeFit charge_fit(const TokenBucket& params, const IntervalBucketState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  const IntervalBucketState current = refilled(params, state, now);
  if (current.tokens - cost >= -max_debt) return {.fits = true};
  if (cost > params.capacity + max_debt) return {};  // never
  // Refills until tokens >= cost - max_debt; the cap at capacity cannot stop it, since
  // capacity - cost >= -max_debt.
  const std::int64_t refills = ceil_div(cost - max_debt - current.tokens, params.refill);
  return {.retry_after = current.refilled_at + refills * params.period - now};
}

void refund(const TokenBucket& params, IntervalBucketState& state, std::int64_t cost, Micros now) {
  state = refilled(params, state, now);
  state.tokens = std::min(params.capacity, state.tokens + cost);
  // Full: the refill clock is idle from now, as refilled() leaves a bucket it finds full.
  if (state.tokens == params.capacity) state.refilled_at = std::max(state.refilled_at, now);
}

std::int64_t balance(const Gcra& params, const TatState& state, Micros now) {
  return smooth(params).balance(state, now);
}

ChargeFit charge_fit(const Gcra& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  return smooth(params).charge_fit(state, cost, max_debt, now);
}

void refund(const Gcra& params, TatState& state, std::int64_t cost, Micros now) {
  smooth(params).refund(state, cost, now);
}

}  // namespace sluice::algorithm
