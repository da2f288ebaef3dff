#include "sluice/algorithm/penalty.h"

#include <algorithm>
#include <string>

namespace sluice::algorithm {
namespace {

void check_duration(std::vector<FieldError>& errors, std::string_view field, Micros value) {
  if (value <= 0) {
    errors.push_back({std::string(field), "must be greater than 0"});
  } else if (value > kMaxPenaltyDuration) {
    errors.push_back({std::string(field), "must be at most 30 days"});
  }
}

}  // namespace

std::vector<FieldError> validate_penalty(const Penalty& penalty) {
  std::vector<FieldError> errors;
  if (penalty.after < 1 || penalty.after > kMaxPenaltyDenials) {
    errors.push_back({"penalty.after",
                      "must be between 1 and " + std::to_string(kMaxPenaltyDenials) + " denials"});
  }
  check_duration(errors, "penalty.within", penalty.within);
  check_duration(errors, "penalty.block", penalty.block);
  check_duration(errors, "penalty.max", penalty.max);
  check_duration(errors, "penalty.quiet", penalty.quiet);
  if (penalty.escalate < 1 || penalty.escalate > kMaxPenaltyEscalate) {
    errors.push_back(
        {"penalty.escalate", "must be between 1 and " + std::to_string(kMaxPenaltyEscalate)});
  }
  if (penalty.block > 0 && penalty.max > 0 && penalty.max < penalty.block) {
    errors.push_back({"penalty.max", "must be at least penalty.block"});
  }
  return errors;
}

Micros block_duration(const Penalty& penalty, std::int64_t blocks) {
  // Multiplied step by step and capped at each step: max <= 30 days keeps every product far
  // below 2^53, as the Redis script computes it.
  Micros duration = penalty.block;
  for (std::int64_t i = 0; i < blocks && duration < penalty.max; ++i) {
    duration *= penalty.escalate;
  }
  return std::min(duration, penalty.max);
}

void deny_for_block(Verdict& verdict, Micros blocked_until, Micros now) {
  const Micros wait = blocked_until - now;
  if (verdict.allowed) {
    verdict.retry_after = wait;
  } else if (verdict.retry_after) {
    verdict.retry_after = std::max(*verdict.retry_after, wait);
  }
  verdict.allowed = false;
  verdict.remaining = 0;
  verdict.delay.reset();
  verdict.reset_after = std::max(verdict.reset_after, wait);
  verdict.blocked_until = blocked_until;
}

bool penalize(const Penalty& penalty, PenaltyState& state, Verdict& verdict, std::int64_t cost,
              Micros now) {
  if (now < state.blocked_until) {
    deny_for_block(verdict, state.blocked_until, now);
    return false;
  }
  if (verdict.allowed || cost == 0) return false;
  std::erase_if(state.strikes, [&](Micros at) { return at <= now - penalty.within; });
  state.strikes.push_back(now);
  if (static_cast<std::int64_t>(state.strikes.size()) >= penalty.after) {
    // The escalation continues while the previous block ended less than `quiet` ago.
    const bool remembered = state.blocked_until > 0 && now < state.blocked_until + penalty.quiet;
    const std::int64_t blocks = remembered ? state.blocks : 0;
    state.blocked_until = now + block_duration(penalty, blocks);
    // Capped: past the point where the duration reaches max, more blocks change nothing.
    state.blocks = std::min<std::int64_t>(blocks + 1, 64);
    state.strikes.clear();
    deny_for_block(verdict, state.blocked_until, now);
  }
  return true;
}

Micros penalty_expires_at(const Penalty& penalty, const PenaltyState& state) {
  Micros at = state.strikes.empty() ? 0 : state.strikes.back() + penalty.within;
  if (state.blocked_until > 0) at = std::max(at, state.blocked_until + penalty.quiet);
  return at;
}

}  // namespace sluice::algorithm
