// Authorization rules (DESIGN.md §4) as pure functions over a user and the apps a policy lists:
// no I/O, no repository, so every front end (HTTP, web UI, CLI --as) applies the same rules and
// the whole matrix is unit-tested. docs/authorization.md is the reference table.
//
//   admin      everything.
//   read       a policy is readable by a user with any role (viewer or owner) on at least one
//              app it lists; a policy for any app ("*") by a user with a role on any app.
//   create     the user owns every app the new policy lists.
//   update     the user owns every app the policy lists before AND after the change (so an
//              owner can neither take a policy away from another app's owners nor hand one to
//              an app they do not own).
//   delete     the user owns every app the policy lists.
//   "*"        a policy listing "*" (alone or with other apps) is written by admins only: it
//              applies to every app, including apps the user does not own.
//   no apps    a policy listing no apps at all (not a valid document; defensive) is admin-only.
//   accounts   users, roles and apps are managed by admins only; a user manages their own
//              tokens, an admin anyone's.
//
// Every denial is PermissionDenied with a message naming the user, the operation and what is
// missing ("bob may not update this policy: needs the owner role on payments (has viewer)").
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/status.h"

namespace sluice::auth {

enum class Operation { kRead, kCreate, kUpdate, kDelete };

// "read", "create", "update", "delete".
std::string_view operation_name(Operation operation);

// The apps a policy lists around an operation. read and delete look at `before` only (the
// stored policy), create at `after` only (the new document), update at both.
struct PolicyApps {
  std::span<const std::string> before;
  std::span<const std::string> after;
};

// OK or PermissionDenied, as in the table above.
Status authorize_policy(const User& user, Operation operation, const PolicyApps& apps);

// authorize_policy(user, kRead, {.before = apps}).ok(), for filtering listings.
bool can_read_policy(const User& user, std::span<const std::string> apps);

// Account administration: admin only.
enum class AdminOperation {
  kManageUsers,  // create, list, delete users; set another user's password
  kManageRoles,  // grant or revoke a per-app role
  kManageApps,   // create or delete apps
};

// "manage users", "manage roles", "manage apps".
std::string_view admin_operation_name(AdminOperation operation);

// OK for admins; PermissionDenied for everyone else.
Status authorize_admin(const User& user, AdminOperation operation);

// Creating, listing or revoking the tokens of `token_owner`: OK for the owner themselves and
// for admins; PermissionDenied otherwise.
Status authorize_tokens(const User& user, std::string_view token_owner);

}  // namespace sluice::auth
