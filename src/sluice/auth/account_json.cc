#include "sluice/auth/account_json.h"

namespace sluice::auth {

std::string_view role_name(Role role) { return role == Role::kOwner ? "owner" : "viewer"; }

std::optional<Role> parse_role(std::string_view text) {
  if (text == "viewer") return Role::kViewer;
  if (text == "owner") return Role::kOwner;
  return std::nullopt;
}

nlohmann::json user_to_json(const User& user) {
  nlohmann::json roles = nlohmann::json::object();
  for (const auto& [app, role] : user.roles) roles[app] = role_name(role);
  return {{"name", user.name},
          {"admin", user.admin},
          {"roles", std::move(roles)},
          {"created_at", user.created_at}};
}

nlohmann::json app_to_json(const App& app) {
  return {{"name", app.name}, {"description", app.description}, {"created_at", app.created_at}};
}

nlohmann::json token_to_json(const TokenRecord& token) {
  return {{"id", token.id},
          {"user", token.user},
          {"description", token.description},
          {"created_at", token.created_at},
          {"expires_at",
           token.expires_at ? nlohmann::json(*token.expires_at) : nlohmann::json(nullptr)}};
}

}  // namespace sluice::auth
