#include "sluice/auth/authorize.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::auth {
namespace {

using Apps = std::vector<std::string>;

User user_with(std::map<std::string, Role> roles) {
  return {.name = "bob", .roles = std::move(roles)};
}

const User kAdmin{.name = "root", .admin = true};
const User kNobody = user_with({});
const User kViewer = user_with({{"checkout", Role::kViewer}, {"mobile", Role::kViewer}});
const User kOwner = user_with({{"checkout", Role::kOwner}, {"mobile", Role::kOwner}});

Status read(const User& user, const Apps& apps) {
  return authorize_policy(user, Operation::kRead, {.before = apps});
}
Status create(const User& user, const Apps& apps) {
  return authorize_policy(user, Operation::kCreate, {.after = apps});
}
Status update(const User& user, const Apps& before, const Apps& after) {
  return authorize_policy(user, Operation::kUpdate, {.before = before, .after = after});
}
Status remove(const User& user, const Apps& apps) {
  return authorize_policy(user, Operation::kDelete, {.before = apps});
}

// ---- One test per rule ----

TEST(Authorize, AdminDoesEverythingIncludingAnyAppPolicies) {
  EXPECT_TRUE(read(kAdmin, {"*"}).ok());
  EXPECT_TRUE(create(kAdmin, {"*"}).ok());
  EXPECT_TRUE(update(kAdmin, {"payments"}, {"*"}).ok());
  EXPECT_TRUE(remove(kAdmin, {"checkout", "payments"}).ok());
  EXPECT_TRUE(authorize_admin(kAdmin, AdminOperation::kManageUsers).ok());
  EXPECT_TRUE(authorize_tokens(kAdmin, "alice").ok());
}

TEST(Authorize, ViewerReadsPoliciesListingAnAppTheyView) {
  EXPECT_TRUE(read(kViewer, {"checkout"}).ok());
  EXPECT_TRUE(read(kViewer, {"payments", "mobile"}).ok());
}

TEST(Authorize, ViewerCannotReadPoliciesOfOtherApps) {
  const Status status = read(kViewer, {"payments", "search"});
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "bob may not read this policy: needs the viewer or owner role on one of its apps "
            "(payments, search)");
}

TEST(Authorize, ViewerCannotWrite) {
  const Status status = create(kViewer, {"checkout"});
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "bob may not create this policy: needs the owner role on checkout (has viewer)");
}

TEST(Authorize, OwnerReadsAndWritesPoliciesOfTheirApps) {
  EXPECT_TRUE(read(kOwner, {"checkout"}).ok());
  EXPECT_TRUE(create(kOwner, {"checkout"}).ok());
  EXPECT_TRUE(update(kOwner, {"checkout"}, {"checkout", "mobile"}).ok());
  EXPECT_TRUE(remove(kOwner, {"checkout", "mobile"}).ok());
}

TEST(Authorize, MultiAppWriteNeedsOwnershipOfEveryAppNamingEachMissingOne) {
  const User user = user_with({{"checkout", Role::kOwner}, {"mobile", Role::kViewer}});
  const Status status = create(user, {"checkout", "mobile", "payments"});
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "bob may not create this policy: needs the owner role on mobile (has viewer), "
            "payments (has none)");
}

TEST(Authorize, UpdateNeedsOwnershipBeforeAndAfter) {
  // Moving a policy to an app the user does not own: refused.
  const Status to_foreign = update(kOwner, {"checkout"}, {"payments"});
  EXPECT_EQ(to_foreign.message(),
            "bob may not update this policy: needs the owner role on payments (has none)");
  // Dropping an app the user does not own from a shared policy: refused too.
  const Status from_shared = update(kOwner, {"checkout", "payments"}, {"checkout"});
  EXPECT_EQ(from_shared.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(from_shared.message().find("payments (has none)"), std::string::npos);
}

TEST(Authorize, AnyAppPoliciesAreReadableByAnyoneWithARole) {
  EXPECT_TRUE(read(kViewer, {"*"}).ok());
  EXPECT_TRUE(read(user_with({{"search", Role::kViewer}}), {"*"}).ok());
  const Status status = read(kNobody, {"*"});
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(),
            "bob may not read this policy: a policy for any app (\"*\") is readable by users "
            "with a role on at least one app, and bob has none");
}

TEST(Authorize, AnyAppPoliciesAreWrittenByAdminsOnly) {
  const std::string expected =
      "only an admin may create, update or delete a policy for any app (\"*\")";
  for (const Status& status : {create(kOwner, {"*"}), create(kOwner, {"checkout", "*"}),
                               update(kOwner, {"*"}, {"checkout"}),
                               update(kOwner, {"checkout"}, {"*"}), remove(kOwner, {"*"})}) {
    EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
    EXPECT_NE(status.message().find(expected), std::string::npos) << status.message();
  }
}

TEST(Authorize, PoliciesListingNoAppsAreAdminOnly) {
  EXPECT_FALSE(read(kOwner, {}).ok());
  EXPECT_FALSE(create(kOwner, {}).ok());
  EXPECT_FALSE(update(kOwner, {"checkout"}, {}).ok());
  EXPECT_FALSE(update(kOwner, {}, {"checkout"}).ok());
  EXPECT_FALSE(remove(kOwner, {}).ok());
  EXPECT_TRUE(create(kAdmin, {}).ok());
}

TEST(Authorize, UserWithoutRolesCanDoNothingWithPolicies) {
  EXPECT_FALSE(read(kNobody, {"checkout"}).ok());
  EXPECT_FALSE(create(kNobody, {"checkout"}).ok());
  EXPECT_FALSE(remove(kNobody, {"checkout"}).ok());
}

TEST(Authorize, CanReadPolicyFiltersListings) {
  EXPECT_TRUE(can_read_policy(kViewer, Apps{"checkout"}));
  EXPECT_FALSE(can_read_policy(kViewer, Apps{"payments"}));
}

TEST(Authorize, AccountAdministrationIsAdminOnly) {
  for (const AdminOperation operation :
       {AdminOperation::kManageUsers, AdminOperation::kManageRoles, AdminOperation::kManageApps}) {
    SCOPED_TRACE(admin_operation_name(operation));
    EXPECT_TRUE(authorize_admin(kAdmin, operation).ok());
    for (const User& user : {kNobody, kViewer, kOwner}) {
      const Status status = authorize_admin(user, operation);
      EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
      EXPECT_EQ(status.message(),
                "bob may not " + std::string(admin_operation_name(operation)) + ": admin only");
    }
  }
}

TEST(Authorize, UsersManageTheirOwnTokensAdminsAnyones) {
  EXPECT_TRUE(authorize_tokens(kNobody, "bob").ok());
  EXPECT_TRUE(authorize_tokens(kAdmin, "bob").ok());
  const Status status = authorize_tokens(kOwner, "alice");
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "bob may not manage the tokens of alice: only alice or an admin may");
}

// ---- The matrix of docs/authorization.md ----
//
// Roles are held on "checkout" and "mobile"; "payments" is another team's app.

enum class Who { kNone, kAppViewer, kAppOwner, kSiteAdmin };
enum class Target { kOwnApp, kOtherApp, kAnyApp, kMultiAppPartlyOwn, kMultiAppAllOwn };

const char* who_name(Who who) {
  switch (who) {
    case Who::kNone:
      return "none";
    case Who::kAppViewer:
      return "viewer";
    case Who::kAppOwner:
      return "owner";
    case Who::kSiteAdmin:
      return "admin";
  }
  return "?";
}

const char* target_name(Target target) {
  switch (target) {
    case Target::kOwnApp:
      return "own app [checkout]";
    case Target::kOtherApp:
      return "other app [payments]";
    case Target::kAnyApp:
      return "any app [*]";
    case Target::kMultiAppPartlyOwn:
      return "multi-app [checkout, payments]";
    case Target::kMultiAppAllOwn:
      return "multi-app [checkout, mobile]";
  }
  return "?";
}

Apps apps_of(Target target) {
  switch (target) {
    case Target::kOwnApp:
      return {"checkout"};
    case Target::kOtherApp:
      return {"payments"};
    case Target::kAnyApp:
      return {"*"};
    case Target::kMultiAppPartlyOwn:
      return {"checkout", "payments"};
    case Target::kMultiAppAllOwn:
      return {"checkout", "mobile"};
  }
  return {};
}

User user_of(Who who) {
  switch (who) {
    case Who::kNone:
      return kNobody;
    case Who::kAppViewer:
      return kViewer;
    case Who::kAppOwner:
      return kOwner;
    case Who::kSiteAdmin:
      return kAdmin;
  }
  return kNobody;
}

struct Row {
  Who who;
  Target target;
  bool read, create, update, remove;  // expected: allowed?
};

constexpr bool Y = true;
constexpr bool N = false;

// clang-format off
constexpr Row kMatrix[] = {
    //  who          target                        read create update delete
    {Who::kNone,   Target::kOwnApp,            N,   N,     N,     N},
    {Who::kNone,   Target::kOtherApp,          N,   N,     N,     N},
    {Who::kNone,   Target::kAnyApp,            N,   N,     N,     N},
    {Who::kNone,   Target::kMultiAppPartlyOwn, N,   N,     N,     N},
    {Who::kNone,   Target::kMultiAppAllOwn,    N,   N,     N,     N},
    {Who::kAppViewer, Target::kOwnApp,            Y,   N,     N,     N},
    {Who::kAppViewer, Target::kOtherApp,          N,   N,     N,     N},
    {Who::kAppViewer, Target::kAnyApp,            Y,   N,     N,     N},
    {Who::kAppViewer, Target::kMultiAppPartlyOwn, Y,   N,     N,     N},
    {Who::kAppViewer, Target::kMultiAppAllOwn,    Y,   N,     N,     N},
    {Who::kAppOwner,  Target::kOwnApp,            Y,   Y,     Y,     Y},
    {Who::kAppOwner,  Target::kOtherApp,          N,   N,     N,     N},
    {Who::kAppOwner,  Target::kAnyApp,            Y,   N,     N,     N},
    {Who::kAppOwner,  Target::kMultiAppPartlyOwn, Y,   N,     N,     N},
    {Who::kAppOwner,  Target::kMultiAppAllOwn,    Y,   Y,     Y,     Y},
    {Who::kSiteAdmin,  Target::kOwnApp,            Y,   Y,     Y,     Y},
    {Who::kSiteAdmin,  Target::kOtherApp,          Y,   Y,     Y,     Y},
    {Who::kSiteAdmin,  Target::kAnyApp,            Y,   Y,     Y,     Y},
    {Who::kSiteAdmin,  Target::kMultiAppPartlyOwn, Y,   Y,     Y,     Y},
    {Who::kSiteAdmin,  Target::kMultiAppAllOwn,    Y,   Y,     Y,     Y},
};
// clang-format on

TEST(AuthorizationMatrix, EveryRoleOperationAndTargetAsDocumented) {
  for (const Row& row : kMatrix) {
    const User user = user_of(row.who);
    const Apps apps = apps_of(row.target);
    const struct {
      Operation operation;
      bool expected;
    } checks[] = {{Operation::kRead, row.read},
                  {Operation::kCreate, row.create},
                  {Operation::kUpdate, row.update},
                  {Operation::kDelete, row.remove}};
    for (const auto& check : checks) {
      SCOPED_TRACE(std::string(who_name(row.who)) + " " +
                   std::string(operation_name(check.operation)) + " " + target_name(row.target));
      // Update keeps the apps unchanged here; changes of apps have their own tests above.
      const Status status =
          authorize_policy(user, check.operation, {.before = apps, .after = apps});
      if (check.expected) {
        EXPECT_TRUE(status.ok()) << status.to_string();
      } else {
        EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
        EXPECT_FALSE(status.message().empty());
      }
    }
  }
}

TEST(AuthorizationMatrix, CoversEveryRoleAndTarget) { EXPECT_EQ(std::size(kMatrix), 4u * 5u); }

}  // namespace
}  // namespace sluice::auth
