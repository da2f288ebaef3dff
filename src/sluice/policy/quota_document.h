// The policy document's fields of usage quotas (docs/quotas.md): the penalty box
// `penalty: {after, within, block, escalate, max, quiet}`, the Retry-After jitter
// `retry_jitter: "10%"` and a fixed window's calendar period `calendar: month` with `time_zone`,
// read from and written to JSON, each problem an error naming its field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "sluice/algorithm/limit.h"
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

// A fixed_window limit with `calendar: day | week | month | year` and optional `time_zone` (IANA,
// default "UTC") in place of `window`: `document` is the limit's object, `prefix` its field name
// ("limits[0]"). Unknown fields, a `window` beside `calendar` and bad values are errors.
std::optional<algorithm::FixedWindow> calendar_window_from_json(
    const nlohmann::json& document, const std::string& prefix,
    std::vector<algorithm::FieldError>& errors);
// Writes `calendar` and `time_zone` into a fixed_window limit's object.
void calendar_to_json(const algorithm::Calendar& calendar, nlohmann::json& limit);

}  // namespace sluice::policy
