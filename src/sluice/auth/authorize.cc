#include "sluice/auth/authorize.h"

#include <algorithm>
#include <vector>

namespace sluice::auth {
namespace {

constexpr std::string_view kAnyApp = "*";

Status denied(const User& user, std::string_view what, std::string_view why) {
  return {StatusCode::kPermissionDenied,
          user.name + " may not " + std::string(what) + ": " + std::string(why)};
}

std::string role_description(const User& user, const std::string& app) {
  const auto it = user.roles.find(app);
  if (it == user.roles.end()) return "none";
  return it->second == Role::kOwner ? "owner" : "viewer";
}

bool lists_any_app(std::span<const std::string> apps) {
  return std::find(apps.begin(), apps.end(), kAnyApp) != apps.end();
}

Status authorize_read(const User& user, std::span<const std::string> apps) {
  const std::string what = "read this policy";
  if (apps.empty()) return denied(user, what, "it lists no apps, so only an admin may read it");
  if (lists_any_app(apps)) {
    if (!user.roles.empty()) return {};
    return denied(user, what,
                  "a policy for any app (\"*\") is readable by users with a role on at least "
                  "one app, and " +
                      user.name + " has none");
  }
  for (const std::string& app : apps) {
    if (user.roles.contains(app)) return {};
  }
  std::string listed;
  for (const std::string& app : apps) listed += (listed.empty() ? "" : ", ") + app;
  return denied(user, what, "needs the viewer or owner role on one of its apps (" + listed + ")");
}

// `apps` may repeat an app (update passes before and after); each is named once.
Status authorize_write(const User& user, Operation operation,
                       const std::vector<std::string>& apps) {
  const std::string what = std::string(operation_name(operation)) + " this policy";
  if (apps.empty()) return denied(user, what, "it lists no apps, so only an admin may change it");
  if (lists_any_app(apps)) {
    return denied(user, what,
                  "only an admin may create, update or delete a policy for any app (\"*\")");
  }
  std::vector<std::string> missing;
  for (const std::string& app : apps) {
    const auto it = user.roles.find(app);
    if (it != user.roles.end() && it->second == Role::kOwner) continue;
    if (std::find(missing.begin(), missing.end(), app) == missing.end()) missing.push_back(app);
  }
  if (missing.empty()) return {};
  std::string why = "needs the owner role on ";
  for (std::size_t i = 0; i < missing.size(); ++i) {
    why += (i == 0 ? "" : ", ") + missing[i] + " (has " + role_description(user, missing[i]) + ")";
  }
  return denied(user, what, why);
}

}  // namespace

std::string_view operation_name(Operation operation) {
  switch (operation) {
    case Operation::kRead:
      return "read";
    case Operation::kCreate:
      return "create";
    case Operation::kUpdate:
      return "update";
    case Operation::kDelete:
      return "delete";
  }
  return "read";
}

Status authorize_policy(const User& user, Operation operation, const PolicyApps& apps) {
  if (user.admin) return {};
  switch (operation) {
    case Operation::kRead:
      return authorize_read(user, apps.before);
    case Operation::kCreate:
      return authorize_write(user, operation, {apps.after.begin(), apps.after.end()});
    case Operation::kUpdate: {
      std::vector<std::string> both(apps.before.begin(), apps.before.end());
      both.insert(both.end(), apps.after.begin(), apps.after.end());
      // Both sides must be non-empty on their own: an update to (or from) no apps is admin-only.
      if (apps.before.empty() || apps.after.empty()) both.clear();
      return authorize_write(user, operation, both);
    }
    case Operation::kDelete:
      return authorize_write(user, operation, {apps.before.begin(), apps.before.end()});
  }
  return denied(user, "do this", "unknown operation");
}

bool can_read_policy(const User& user, std::span<const std::string> apps) {
  return authorize_policy(user, Operation::kRead, {.before = apps}).ok();
}

std::string_view admin_operation_name(AdminOperation operation) {
  switch (operation) {
    case AdminOperation::kManageUsers:
      return "manage users";
    case AdminOperation::kManageRoles:
      return "manage roles";
    case AdminOperation::kManageApps:
      return "manage apps";
  }
  return "manage accounts";
}

Status authorize_admin(const User& user, AdminOperation operation) {
  if (user.admin) return {};
  return denied(user, admin_operation_name(operation), "admin only");
}

Status authorize_tokens(const User& user, std::string_view token_owner) {
  if (user.admin || user.name == token_owner) return {};
  return denied(user, "manage the tokens of " + std::string(token_owner),
                "only " + std::string(token_owner) + " or an admin may");
}

}  // namespace sluice::auth
