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

  friend bool operator==(const Verdict&, const Verdict&) = default;
};

}  // namespace sluice::algorithm
