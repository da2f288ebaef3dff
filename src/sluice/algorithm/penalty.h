// The penalty box (docs/quotas.md#penalty-box): a policy may block a subject that keeps being
// denied. A subject denied `after` times within `within` is blocked for `block`, whatever its
// budget; each further block lasts `escalate` times longer, up to `max`, and the escalation is
// forgotten after a `quiet` period without a block. Pure functions over PenaltyState, applied by
// the stores after the limits have decided (memory: under the shard lock; Redis: in the same
// script call as the limits).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/time.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {

struct Penalty {
  std::int64_t after = 0;     // denials, 1 .. kMaxPenaltyDenials
  Micros within = 0;          // the window those denials fall in
  Micros block = 0;           // the first block
  std::int64_t escalate = 2;  // each further block is this many times longer (1: never longer)
  Micros max = 0;             // the longest block
  Micros quiet = 0;           // a block ending this long before the next strike is forgotten
  friend bool operator==(const Penalty&, const Penalty&) = default;
};

inline constexpr std::int64_t kMaxPenaltyDenials = 100;
inline constexpr std::int64_t kMaxPenaltyEscalate = 10;
// The longest `within`, `block`, `max` and `quiet` may be.
inline constexpr Micros kMaxPenaltyDuration = 30 * kMicrosPerDay;

// A subject's penalty state: when its current block ends (0: never blocked), how many blocks the
// current escalation has seen, and the instants of its recent denials (strikes), oldest first.
struct PenaltyState {
  Micros blocked_until = 0;
  std::int64_t blocks = 0;
  std::vector<Micros> strikes;
  friend bool operator==(const PenaltyState&, const PenaltyState&) = default;
};

// Errors of a policy's `penalty`, fields named "penalty.after" and so on.
std::vector<FieldError> validate_penalty(const Penalty& penalty);

// How long block number `blocks` (0: the first) of an escalation lasts: block · escalate^blocks,
// at most max.
Micros block_duration(const Penalty& penalty, std::int64_t blocks);

// Applies the penalty to an acquire of `cost` at `now` whose limits decided `verdict` (without
// charging anything yet). While `state` blocks the subject the verdict becomes a denial
// (deny_for_block). Otherwise a denial with cost > 0 is a strike: strikes older than `within` are
// forgotten, and the `after`-th strike starts a block at once (this denial reports it). Returns
// whether `state` changed. The caller charges the limits only when the verdict stays allowed.
bool penalize(const Penalty& penalty, PenaltyState& state, Verdict& verdict, std::int64_t cost,
              Micros now);

// A verdict denied by a block ending at `blocked_until` (> now): nothing is grantable now
// (remaining 0, no delay); retry_after is the later of the block's end and the limits' own
// retry_after (absent when the limits can never grant the cost); reset_after is at least the
// block's end; blocked_until is set.
void deny_for_block(Verdict& verdict, Micros blocked_until, Micros now);

// Instant from which `state` is as good as none (no strike within `within`, escalation forgotten
// and no block): stores drop it then. 0 for an empty state.
Micros penalty_expires_at(const Penalty& penalty, const PenaltyState& state);

}  // namespace sluice::algorithm
