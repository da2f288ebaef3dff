// The policy fields of the defences in front of the store (docs/defences.md): `rollout` (staged
// rollout of mode enforce) and `over_limit_cache` (the local over-limit cache). Kept apart from
// document.cc so the defences read, check and write their own fields.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/policy/policy.h"

namespace sluice::policy {

// Reads `rollout` and `over_limit_cache` from a policy document into `policy` (whose mode and
// limits are already read), appending an error naming the field for each bad value:
//   rollout: a number 0..100 or a string "12.5%"; only with mode enforce.
//   over_limit_cache: a boolean; true is refused for a policy with a concurrency limit.
void read_defence_fields(const nlohmann::json& document, Policy& policy,
                         std::vector<algorithm::FieldError>& errors);
// Writes the fields that are set ("rollout": "12.5%").
void write_defence_fields(const Policy& policy, nlohmann::json& document);

// Whether decisions of `policy` use the over-limit cache: the policy's over_limit_cache when
// set, else true exactly when every denial is exact to cache — no concurrency limit (another
// caller's release frees units at any time) and no max_debt (a quota policy expects refunds,
// which free units before the denial's retry_after). Never with a penalty box: the store counts
// each denial as a strike, so it must see them all (document.cc refuses `true` there).
bool uses_over_limit_cache(const Policy& policy);

// "12.5%" for 12.5; "10%" for 10.
std::string format_rollout(double percent);

}  // namespace sluice::policy
