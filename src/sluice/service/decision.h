// Decision: the answer to "may this caller do this now?" as every front end reports it
// (DESIGN.md §2, §5a): the deciding limit's verdict plus which policy, limit and mode decided.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "sluice/algorithm/verdict.h"
#include "sluice/policy/policy.h"

namespace sluice::service {

struct Decision {
  algorithm::Verdict verdict;
  std::size_t limit_index = 0;
  std::optional<std::string> lease;
  std::string policy;
  policy::Mode mode = policy::Mode::kEnforce;
  bool degraded = false;  // decided by the failure mode because the store was unreachable
  // Shadow mode only: the policy would have denied this request; it was allowed anyway.
  bool shadow_denied = false;
};

// Microseconds to whole milliseconds, rounded up so a caller that waits that long is never early.
std::int64_t millis_rounded_up(Micros duration);

// The JSON body of §5a: allowed, limit, remaining, retry_after_ms, reset_after_ms, delay_ms,
// lease, policy, limit_index, mode, degraded (absent values are null), plus shadow_denied.
nlohmann::json decision_to_json(const Decision& decision);

}  // namespace sluice::service
