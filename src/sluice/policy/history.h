// A policy's audit history as the CLI and the admin API show it, and whose permissions govern
// reading it once the policy is gone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/policy/repository.h"

namespace sluice::policy {

std::string_view change_action_name(ChangeAction action);  // "create", "update", "delete"

// {"id", "policy", "action", "actor", "at" (Unix µs), "version", "old"?, "new"?}
nlohmann::json change_to_json(const PolicyChange& change);

// The apps the policy listed in its last recorded document (the new one, or the old one of a
// deletion): reading a deleted policy's history takes the permissions it last had.
std::vector<std::string> last_listed_apps(const std::vector<PolicyChange>& history);

}  // namespace sluice::policy
