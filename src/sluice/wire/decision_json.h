// The decision's JSON (DESIGN.md §5a), written and read in one place: the server writes it for
// every acquire and check, RemoteLimiter (and any other client) reads it back.
//   {"allowed", "degraded", "delay_ms", "lease", "limit", "limit_index", "mode", "policy",
//    "remaining", "reset_after_ms", "retry_after_ms", "shadow_denied"}
// Durations are whole milliseconds rounded up (a caller that waits them is never early); absent
// values are null.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sluice/service/decision.h"
#include "sluice/status.h"

namespace sluice::wire {

// The object above as compact JSON, keys in that order, without building a JSON value: the hot
// path of every acquire and check. Invalid UTF-8 in a string is replaced, never thrown.
std::string decision_json(const Decision& decision);

// The object above read back (milliseconds become microseconds). InvalidArgument naming the field
// when the JSON does not have that shape.
StatusOr<Decision> decision_from_json(const nlohmann::json& json);

}  // namespace sluice::wire
