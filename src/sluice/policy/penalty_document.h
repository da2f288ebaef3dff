// The policy document's fields of the penalty box and the Retry-After jitter (docs/quotas.md):
// `penalty: {after, within, block, escalate, max, quiet}` and `retry_jitter: "10%"`, read from and
// written to JSON, each problem an error naming its field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sluice/algorithm/penalty.h"
#include "sluice/algorithm/validate.h"

namespace sluice::policy {

// `section` is the value of the document's "penalty" key. Defaults: escalate 2; max = block when
// escalate is 1 (required otherwise); quiet = max. Validated (algorithm::validate_penalty).
std::optional<algorithm::Penalty> penalty_from_json(const nlohmann::json& section,
                                                    std::vector<algorithm::FieldError>& errors);
nlohmann::json penalty_to_json(const algorithm::Penalty& penalty);

// The largest retry_jitter, in percent.
inline constexpr std::int64_t kMaxRetryJitterPercent = 100;
// `value` is the document's "retry_jitter": a percentage "0%" .. "100%". Returns the percent.
std::optional<std::int64_t> retry_jitter_from_json(const nlohmann::json& value,
                                                   std::vector<algorithm::FieldError>& errors);

}  // namespace sluice::policy
