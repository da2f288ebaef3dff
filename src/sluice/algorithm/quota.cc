#include "sluice/algorithm/quota.h"

#include <cassert>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/leaky_bucket.h"
#include "sluice/algorithm/token_bucket.h"
#include "sluice/algorithm/window.h"

namespace sluice::algorithm {
namespace {

// f(params, typed_state) for a limit that is not concurrency (check_quota_limits); a
// concurrency limit, against the precondition, answers a refusal and is left alone.
template <typename F>
Verdict with_quota_state(const Limit& limit, LimitState& state, F&& f) {
  return std::visit(
      [&](const auto& params) -> Verdict {
        using Params = std::decay_t<decltype(params)>;
        if constexpr (std::is_same_v<Params, TokenBucket>) {
          if (params.refill_mode == RefillMode::kInterval) {
            return f(params, std::get<IntervalBucketState>(state));
          }
          return f(params, std::get<TatState>(state));
        } else if constexpr (std::is_same_v<Params, Concurrency>) {
          assert(false && "check_quota_limits refuses concurrency limits");
          return {.limit = params.limit};
        } else {
          using State = decltype(initial_state(params, Micros{}));
          return f(params, std::get<State>(state));
        }
      },
      limit);
}

// The verdict a quota operation reports for one limit whose state is `state`: a peek's limit,
// remaining and reset_after, and the signed balance. Allowed; no retry_after, no delay.
template <typename Params, typename State>
Verdict standing(const Params& params, const State& state, Micros now) {
  Verdict verdict = decide(params, state, 0, now);
  verdict.allowed = true;
  verdict.retry_after.reset();
  verdict.delay.reset();
  verdict.balance = balance(params, state, now);
  return verdict;
}

// Charged or refunded: the limit with the lowest balance decides (the first of equals).
PolicyVerdict lowest_balance(const std::vector<Verdict>& verdicts) {
  PolicyVerdict result{.verdict = verdicts[0], .limit_index = 0};
  for (std::size_t i = 1; i < verdicts.size(); ++i) {
    if (*verdicts[i].balance < *result.verdict.balance) result = {verdicts[i], i};
  }
  return result;
}

// Refused: the longest retry_after decides; a limit that never fits wins (evaluate's rule).
bool refusal_tighter(const Verdict& a, const Verdict& b) {
  if (a.allowed != b.allowed) return !a.allowed;
  if (a.allowed) return false;
  if (!b.retry_after) return false;
  if (!a.retry_after) return true;
  return *a.retry_after > *b.retry_after;
}

}  // namespace

std::vector<FieldError> validate_max_debt(std::int64_t max_debt, std::span<const Limit> limits,
                                          const ValidationOptions& options) {
  if (max_debt < 0) return {{.field = "max_debt", .message = "must not be negative"}};
  if (max_debt > kMaxDebt) {
    return {{.field = "max_debt", .message = "must be at most " + std::to_string(kMaxDebt)}};
  }
  std::vector<FieldError> errors;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const std::string prefix = "limits[" + std::to_string(i) + "]";
    if (max_debt == 0 || !validate_limit(limits[i], prefix, options).empty()) continue;
    // The limit as deep as a debt can take it.
    std::optional<Limit> deeper;
    std::string what;
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, TokenBucket>) {
            TokenBucket d = p;
            d.capacity += max_debt;
            deeper = d;
            what = "capacity + max_debt";
          } else if constexpr (std::is_same_v<P, Gcra>) {
            deeper = Gcra{.rate = p.rate, .period = p.period, .burst = p.burst + max_debt};
            what = "burst + 1 + max_debt";
          } else if constexpr (std::is_same_v<P, LeakyBucket>) {
            // The queue in debt reaches max_delay·rate + (max_debt + 1)·period, scaled by rate.
            const Int128 reach =
                Int128{p.max_delay} * p.rate + (Int128{max_debt} + 1) * Int128{p.period};
            if (reach >= kMaxExactInteger || reach / p.rate > kMaxHorizon) {
              errors.push_back({.field = "max_debt",
                                .message = "too large for " + prefix +
                                           " (leaky_bucket): max_delay × rate + (max_debt + 1) × "
                                           "period must stay below 2^53 and within 100 years"});
            }
          } else if constexpr (std::is_same_v<P, Concurrency>) {
            // Not charged (check_quota_limits).
          } else {
            P d = p;
            d.limit += max_debt;
            deeper = d;
            what = "limit + max_debt";
          }
        },
        limits[i]);
    if (!deeper) continue;
    for (const FieldError& error : validate_limit(*deeper, prefix, options)) {
      errors.push_back({.field = "max_debt",
                        .message = "too large for " + prefix + " (" +
                                   std::string(algorithm_name(limits[i])) + ", with " + what +
                                   "): " + error.field + " " + error.message});
    }
  }
  return errors;
}

Status check_quota_limits(std::span<const Limit> limits) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (std::holds_alternative<Concurrency>(limits[i])) {
      return {StatusCode::kFailedPrecondition,
              "limits[" + std::to_string(i) +
                  "]: a concurrency limit counts live leases, which cannot be charged or "
                  "refunded; acquire a lease and release it instead"};
    }
  }
  return {};
}

PolicyVerdict charge(std::span<const Limit> limits, std::span<LimitState> states, std::int64_t cost,
                     std::int64_t max_debt, Micros now) {
  assert(!limits.empty() && limits.size() == states.size());
  std::vector<Verdict> verdicts;
  bool fits = true;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    verdicts.push_back(with_quota_state(limits[i], states[i], [&](const auto& p, auto& state) {
      const ChargeFit fit = charge_fit(p, state, cost, max_debt, now);
      Verdict verdict = standing(p, state, now);
      verdict.allowed = fit.fits;
      verdict.retry_after = fit.retry_after;
      return verdict;
    }));
    fits = fits && verdicts.back().allowed;
  }
  if (!fits) {
    PolicyVerdict result{.verdict = verdicts[0], .limit_index = 0};
    for (std::size_t i = 1; i < verdicts.size(); ++i) {
      if (refusal_tighter(verdicts[i], result.verdict)) result = {verdicts[i], i};
    }
    return result;
  }
  for (std::size_t i = 0; i < limits.size(); ++i) {
    verdicts[i] = with_quota_state(limits[i], states[i], [&](const auto& p, auto& state) {
      if (cost > 0) commit(p, state, cost, now);
      return standing(p, state, now);
    });
  }
  return lowest_balance(verdicts);
}

PolicyVerdict refund(std::span<const Limit> limits, std::span<LimitState> states, std::int64_t cost,
                     Micros now) {
  assert(!limits.empty() && limits.size() == states.size());
  std::vector<Verdict> verdicts;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    verdicts.push_back(with_quota_state(limits[i], states[i], [&](const auto& p, auto& state) {
      if (cost > 0) refund(p, state, cost, now);
      return standing(p, state, now);
    }));
  }
  return lowest_balance(verdicts);
}

PolicyVerdict settle_refund(std::span<const Limit> limits, std::span<LimitState> states,
                            std::int64_t cost, Micros charged_at, Micros now) {
  assert(!limits.empty() && limits.size() == states.size());
  std::vector<Verdict> verdicts;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    verdicts.push_back(with_quota_state(limits[i], states[i], [&](const auto& p, auto& state) {
      using Params = std::decay_t<decltype(p)>;
      if (cost > 0) {
        if constexpr (std::is_same_v<Params, FixedWindow> ||
                      std::is_same_v<Params, SlidingWindow> || std::is_same_v<Params, SlidingLog>) {
          refund_charged_at(p, state, cost, charged_at, now);
        } else {
          refund(p, state, cost, now);
        }
      }
      return standing(p, state, now);
    }));
  }
  return lowest_balance(verdicts);
}

}  // namespace sluice::algorithm
