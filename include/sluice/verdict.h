// Verdict: what one limit (or a whole policy, see evaluate.h) answers for one request.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/time.h"

namespace sluice::algorithm {

struct Verdict {
  bool allowed = false;
  // The most this limit grants at once (capacity, window limit, burst + 1, concurrent units...).
  std::int64_t limit = 0;
  // Units still grantable right now after this request (unchanged when denied).
  std::int64_t remaining = 0;
  // Denied only: the same request is allowed exactly this long from now (absent traffic) and not
  // one microsecond earlier. Absent when allowed, or when the cost can never be granted.
  std::optional<Micros> retry_after;
  // Until this limit's state is back to unused (full bucket, empty window).
  Micros reset_after = 0;
  // Leaky bucket, allowed only: how long the caller must wait before acting.
  std::optional<Micros> delay;
  // Quota operations only (charge, refund: algorithm/quota.h): the units grantable right now
  // after the operation, signed. Negative is a debt that later requests wait for, bounded by the
  // policy's max_debt. Absent for acquire and inspect, whose `remaining` never goes below 0.
  std::optional<std::int64_t> balance;
  // Set when the policy's penalty box blocks the subject (algorithm/penalty.h): the instant, on
  // the store's clock (Redis: its TIME), in µs since the Unix epoch, when the block ends. Every
  // acquire is denied until then, whatever the budget.
  std::optional<Micros> blocked_until;

  friend bool operator==(const Verdict&, const Verdict&) = default;
};

}  // namespace sluice::algorithm
