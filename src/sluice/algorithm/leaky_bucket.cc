#include "sluice/algorithm/leaky_bucket.h"

#include <algorithm>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/tat.h"
#include "sluice/algorithm/validate.h"

namespace sluice::algorithm {
namespace {

Pace pace_of(const LeakyBucket& p) { return {.rate = p.rate, .period = p.period}; }

// Unit requests that would still be admitted now behind a queue ending at `tat`.
std::int64_t free_slots(const LeakyBucket& p, const TatState& tat, Micros now) {
  const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(tat, now, p.rate));
  const Int128 slack = static_cast<Int128>(p.max_delay) * p.rate - ahead;
  if (slack < 0) return 0;
  return saturate(slack / p.period + 1);
}

}  // namespace

std::int64_t queue_capacity(const LeakyBucket& params) {
  return saturate(static_cast<Int128>(params.max_delay) * params.rate / params.period + 1);
}

TatState initial_state(const LeakyBucket& /*params*/, Micros now) {
  return {.tat = now, .fraction = 0};
}

Verdict decide(const LeakyBucket& params, const TatState& state, std::int64_t cost, Micros now) {
  Verdict verdict{.limit = queue_capacity(params)};
  const TatState start = tat_not_before(state, now);
  verdict.reset_after = tat_ceil(start) - now;
  verdict.remaining = free_slots(params, start, now);
  // Never: the request's own emission time cost·period/rate would pass the 100-year horizon, so
  // the queue's TAT could leave the exact range of Lua's doubles.
  const Int128 emission_scaled = Int128{cost} * params.period;
  if (emission_scaled >= kMaxExactInteger || emission_scaled > Int128{kMaxHorizon} * params.rate) {
    return verdict;
  }
  const Int128 wait_scaled = tat_scaled_ahead(start, now, params.rate);
  if (wait_scaled <= static_cast<Int128>(params.max_delay) * params.rate) {
    const TatState next = tat_advance(start, cost, pace_of(params));
    verdict.allowed = true;
    verdict.delay = tat_ceil(start) - now;
    verdict.remaining = free_slots(params, next, now);
    verdict.reset_after = tat_ceil(next) - now;
    return verdict;
  }
  // Admitted from the first t with TAT - t <= max_delay.
  verdict.retry_after = tat_ceil(start) - params.max_delay - now;
  return verdict;
}

void commit(const LeakyBucket& params, TatState& state, std::int64_t cost, Micros now) {
  state = tat_advance(tat_not_before(state, now), cost, pace_of(params));
}

Micros expires_at(const LeakyBucket& /*params*/, const TatState& state) { return tat_ceil(state); }

std::int64_t balance(const LeakyBucket& params, const TatState& state, Micros now) {
  const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(state, now, params.rate));
  const Int128 slack = Int128{params.max_delay} * params.rate - ahead;
  return saturate(floor_div(slack, Int128{params.period}) + 1);
}

ChargeFit charge_fit(const LeakyBucket& params, const TatState& state, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  // balance after >= -max_debt  <=>  ahead + cost·period <= max_delay·rate + (max_debt + 1)·period
  // <=>  ahead <= bound, with bound = max_delay·rate + (max_debt + 1 - cost)·period.
  const TatState start = tat_not_before(state, now);
  const Int128 ahead = tat_scaled_ahead(start, now, params.rate);
  const Int128 bound = Int128{params.max_delay} * params.rate +
                       (Int128{max_debt} + 1 - cost) * Int128{params.period};
  if (ahead <= bound) return {.fits = true};
  if (bound < 0) return {};  // never: more than the queue holds plus max_debt
  // The queue shrinks by one µs·rate per µs: the first t with (tat - t)·rate + fraction <= bound.
  const Int128 shift = Int128{start.fraction} - bound;
  const Int128 wait = shift > 0 ? (shift + params.rate - 1) / params.rate : -(-shift / params.rate);
  return {.retry_after = start.tat + static_cast<Micros>(wait) - now};
}

void refund(const LeakyBucket& params, TatState& state, std::int64_t cost, Micros now) {
  const Int128 ahead = std::max<Int128>(0, tat_scaled_ahead(state, now, params.rate));
  const Int128 left = std::max<Int128>(0, ahead - Int128{cost} * params.period);
  state = {.tat = now + static_cast<Micros>(left / params.rate),
           .fraction = static_cast<std::int64_t>(left % params.rate)};
}

}  // namespace sluice::algorithm
