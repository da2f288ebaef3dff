#include "sluice/algorithm/evaluate.h"

#include <algorithm>
#include <cassert>
#include <type_traits>

#include "sluice/algorithm/concurrency.h"
#include "sluice/algorithm/leaky_bucket.h"
#include "sluice/algorithm/token_bucket.h"
#include "sluice/algorithm/window.h"

namespace sluice::algorithm {
namespace {

// Calls f(params, typed_state) when `state` holds the type `params` works on.
// `StateRef` is LimitState or const LimitState.
template <typename StateRef, typename F>
auto with_typed_state(const Limit& limit, StateRef& state, F&& f) {
  return std::visit(
      [&](const auto& params) {
        using Params = std::decay_t<decltype(params)>;
        if constexpr (std::is_same_v<Params, TokenBucket>) {
          if (params.refill_mode == RefillMode::kInterval) {
            return f(params, std::get<IntervalBucketState>(state));
          }
          return f(params, std::get<TatState>(state));
        } else {
          using State = decltype(initial_state(params, Micros{}));
          return f(params, std::get<State>(state));
        }
      },
      limit);
}

// Whether verdict `a` decides over `b` (see PolicyVerdict).
bool is_tighter(const Verdict& a, const Verdict& b) {
  if (a.allowed != b.allowed) return !a.allowed;
  if (a.allowed) return a.remaining < b.remaining;
  if (!b.retry_after) return false;  // b can never pass: nothing is tighter
  if (!a.retry_after) return true;
  return *a.retry_after > *b.retry_after;
}

}  // namespace

LimitState initial_state(const Limit& limit, Micros now) {
  return std::visit([now](const auto& params) -> LimitState { return initial_state(params, now); },
                    limit);
}

bool state_fits(const Limit& limit, const LimitState& state) {
  // Compares against the state type each algorithm's initial_state returns, without building one
  // (this runs on every decision of the memory store).
  return std::visit(
      [&](const auto& params) {
        using Params = std::decay_t<decltype(params)>;
        if constexpr (std::is_same_v<Params, TokenBucket>) {
          return params.refill_mode == RefillMode::kInterval
                     ? std::holds_alternative<IntervalBucketState>(state)
                     : std::holds_alternative<TatState>(state);
        } else {
          using State = decltype(initial_state(params, Micros{}));
          return std::holds_alternative<State>(state);
        }
      },
      limit);
}

Micros expires_at(const Limit& limit, const LimitState& state) {
  return with_typed_state(limit, state, [](const auto& params, const auto& typed) {
    return expires_at(params, typed);
  });
}

Verdict decide_limit(const Limit& limit, const LimitState& state, std::int64_t cost, Micros now) {
  return with_typed_state(limit, state, [&](const auto& params, const auto& typed) {
    return decide(params, typed, cost, now);
  });
}

void commit_limit(const Limit& limit, LimitState& state, std::int64_t cost, Micros now,
                  std::string_view lease_id) {
  with_typed_state(limit, state, [&](const auto& params, auto& typed) {
    if constexpr (std::is_same_v<std::decay_t<decltype(params)>, Concurrency>) {
      commit(params, typed, cost, now, lease_id);
    } else {
      commit(params, typed, cost, now);
    }
  });
}

bool commit_denied_limit(const Limit& limit, LimitState& state, std::int64_t cost, Micros now) {
  bool wrote = false;
  with_typed_state(limit, state, [&](const auto& params, auto& typed) {
    // A counting window takes a cost it denies itself (not one another limit denied).
    if constexpr (std::is_same_v<std::decay_t<decltype(params)>, FixedWindow>) {
      if (!decide(params, typed, cost, now).allowed) {
        wrote = commit_denied(params, typed, cost, now);
      }
    }
  });
  return wrote;
}

PolicyVerdict evaluate(std::span<const Limit> limits, std::span<LimitState> states,
                       std::int64_t cost, Micros now, std::string_view lease_id) {
  assert(!limits.empty() && limits.size() == states.size());
  PolicyVerdict result;
  std::optional<Micros> longest_delay;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const Verdict verdict = decide_limit(limits[i], states[i], cost, now);
    if (verdict.delay)
      longest_delay = std::max(verdict.delay.value_or(0), longest_delay.value_or(0));
    if (i == 0 || is_tighter(verdict, result.verdict)) {
      result.verdict = verdict;
      result.limit_index = i;
    }
  }
  if (!result.verdict.allowed) {
    for (std::size_t i = 0; i < limits.size(); ++i) {
      result.wrote = commit_denied_limit(limits[i], states[i], cost, now) || result.wrote;
    }
    return result;
  }
  result.verdict.delay = longest_delay;
  if (cost == 0) return result;
  result.wrote = true;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    commit_limit(limits[i], states[i], cost, now, lease_id);
  }
  return result;
}

PolicyVerdict combine_verdicts(std::span<const Verdict> verdicts) {
  assert(!verdicts.empty());
  PolicyVerdict result;
  std::optional<Micros> longest_delay;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].delay) {
      longest_delay = std::max(verdicts[i].delay.value_or(0), longest_delay.value_or(0));
    }
    if (i == 0 || is_tighter(verdicts[i], result.verdict)) {
      result.verdict = verdicts[i];
      result.limit_index = i;
    }
  }
  if (result.verdict.allowed) result.verdict.delay = longest_delay;
  return result;
}

bool release_lease(std::span<const Limit> limits, std::span<LimitState> states,
                   std::string_view lease_id, Micros now) {
  bool released = false;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (!std::holds_alternative<Concurrency>(limits[i])) continue;
    released |= release(std::get<ConcurrencyState>(states[i]), lease_id, now);
  }
  return released;
}

bool renew_lease(std::span<const Limit> limits, std::span<LimitState> states,
                 std::string_view lease_id, Micros now) {
  bool renewed = false;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const auto* params = std::get_if<Concurrency>(&limits[i]);
    if (params == nullptr) continue;
    renewed |= renew(*params, std::get<ConcurrencyState>(states[i]), lease_id, now);
  }
  return renewed;
}

bool uses_leases(std::span<const Limit> limits) {
  return std::any_of(limits.begin(), limits.end(),
                     [](const Limit& limit) { return std::holds_alternative<Concurrency>(limit); });
}

}  // namespace sluice::algorithm
