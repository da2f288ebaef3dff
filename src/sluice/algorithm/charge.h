// ChargeFit: whether a charge (algorithm/quota.h) fits one limit, and if not, when it will.
#pragma once

#include <optional>

#include "sluice/time.h"

namespace sluice::algorithm {

struct ChargeFit {
  bool fits = false;
  // Not fitting only: the same charge fits exactly this long from now (absent traffic) and not
  // one microsecond earlier. Absent when it fits, or when it never can (cost > limit + max_debt).
  std::optional<Micros> retry_after;
};

}  // namespace sluice::algorithm
