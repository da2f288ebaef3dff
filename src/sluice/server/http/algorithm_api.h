// GET /v1/algorithms: the algorithm catalogue (algorithm/catalogue.h) as JSON, so the console
// builds its editor (fields, types, defaults, hints) and its limit words from the server's one
// description of the algorithms instead of a copy of its own. Read-only and the same for every
// caller; authenticated like the rest of the admin API (docs/admin-api.md).
#pragma once

#include <nlohmann/json.hpp>

namespace sluice::http {

// {"algorithms": [{"name", "summary", "size", "window", "scaling", "quota_unit", "calendar",
//   "leases", "parameters": [{"name", "type": "count"|"duration"|"choice", "required",
//   "default"?, "choices"?, "example"?, "hint"?}], "words": [{"text", "when", "field"?,
//   "operand"?}]}]}, in the order documents list them. Counts are JSON integers, durations and
// choices strings as documents write them.
nlohmann::json algorithms_json();

}  // namespace sluice::http
