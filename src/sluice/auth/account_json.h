// The JSON shape of accounts, one definition for the CLI (`sluice admin … --format json`) and the
// admin API: users with their per-app roles, apps, and token records (never their secrets).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "sluice/auth/accounts.h"

namespace sluice::auth {

std::string_view role_name(Role role);                  // "viewer", "owner"
std::optional<Role> parse_role(std::string_view text);  // nullopt for anything else

// {"name", "admin", "roles": {app: role}, "created_at"} (Unix µs)
nlohmann::json user_to_json(const User& user);
// {"name", "description", "created_at"}
nlohmann::json app_to_json(const App& app);
// {"id", "user", "description", "created_at"}: the stored hash stays inside.
nlohmann::json token_to_json(const TokenRecord& token);

}  // namespace sluice::auth
