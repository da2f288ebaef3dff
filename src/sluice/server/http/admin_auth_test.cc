// AdminAuth against every SQL backend (a SQLite file, a real MariaDB, a real PostgreSQL, the
// servers started once for the binary on free loopback ports and stopped by PID): logins refuse
// name variants the databases would match loosely, before any lookup or throttling; a session
// is the stored user's, and it ends once that user's password or roles change or the user is
// deleted and re-created — whether the change comes from this server, another one or the CLI
// (both: the same database through another connection pool). Time is a ManualClock.
#include "sluice/server/http/admin_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sluice/auth/passwords.h"
#include "sluice/db/stores.h"
#include "testing/sql_servers.h"

namespace sluice::http {
namespace {

using ::testing::HasSubstr;

constexpr auth::PasswordHashOptions kFastHash{.time_cost = 1, .memory_kib = 64};
constexpr std::string_view kPassword = "correct horse battery staple";
constexpr std::string_view kOtherPassword = "another horse battery staple";

using Backend = test::SqlBackend;
using test::SqlServers;

// Registered during static initialization, so GoogleTest tears it down after the last test.
[[maybe_unused]] SqlServers& kServers = SqlServers::get();

Request with_cookie(std::string_view method, const std::string& session) {
  return {.method = std::string(method),
          .target = "/v1/session",
          .path = "/v1/session",
          .headers = {{"Cookie", std::string(kSessionCookie) + "=" + session}}};
}

class AdminAuthTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    StatusOr<std::string> url = SqlServers::get().fresh_url(GetParam());
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    url_ = *url;
    StatusOr<db::SqlStores> stores = db::open_sql_stores(url_, &clock_);
    ASSERT_TRUE(stores.ok()) << stores.status().to_string();
    stores_ = std::move(*stores);
    ASSERT_TRUE(accounts().create_app({.name = "checkout"}).ok());
    add_user("admin", true);
    add_user("dave", false);
    auth_ = std::make_unique<AdminAuth>(accounts(), clock_, options());
  }

  static AdminAuthOptions options() {
    return {.session_ttl = 3600 * kMicrosPerSecond,
            .login_burst = 3,
            .login_interval = 60 * kMicrosPerSecond,
            .password_hash = kFastHash};
  }

  auth::AccountRepository& accounts() { return *stores_.accounts; }

  void add_user(const std::string& name, bool admin) {
    StatusOr<std::string> hash = auth::hash_password(kPassword, kFastHash);
    ASSERT_TRUE(hash.ok());
    Status created = accounts().create_user({.name = name, .admin = admin}, *hash);
    ASSERT_TRUE(created.ok()) << created.to_string();
  }

  // The same database through a pool of its own: what `sluice admin` or a second server sees.
  std::unique_ptr<db::SqlStores> elsewhere() {
    StatusOr<db::SqlStores> other =
        db::open_sql_stores(url_, &clock_, {.pool_size = 1, .share = false});
    EXPECT_TRUE(other.ok()) << other.status().to_string();
    if (!other.ok()) return nullptr;
    EXPECT_NE(other->database.get(), stores_.database.get());
    return std::make_unique<db::SqlStores>(std::move(*other));
  }

  std::string login(AdminAuth& auth, std::string_view user) {
    const LoginResult result = auth.login(user, kPassword, "127.0.0.1");
    EXPECT_TRUE(result.status.ok()) << result.status.to_string();
    return result.session;
  }

  // Exhausts the login budget of `user` with wrong passwords.
  void throttle(std::string_view user) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(auth_->login(user, "wrong password", "127.0.0.1").status.code(),
                StatusCode::kUnauthenticated);
    }
    ASSERT_EQ(auth_->login(user, kPassword, "127.0.0.1").status.code(),
              StatusCode::kResourceExhausted);
  }

  ManualClock clock_{1'700'000'000'000'000};
  std::string url_;
  db::SqlStores stores_;
  std::unique_ptr<AdminAuth> auth_;
};

INSTANTIATE_TEST_SUITE_P(Backends, AdminAuthTest,
                         ::testing::Values(Backend::kSqliteFile, Backend::kMariaDb,
                                           Backend::kPostgresql),
                         [](const ::testing::TestParamInfo<Backend>& test) {
                           return test::sql_backend_name(test.param);
                         });

TEST_P(AdminAuthTest, NameVariantsOfAThrottledUserAreRefusedWithoutLoggingIn) {
  throttle("admin");
  const std::string nbsp = "\u00a0";
  const std::string variants[] = {
      std::string("admin\0", 6),   // PostgreSQL's client library ends the string at NUL
      std::string("admin\0x", 7),  //
      "admin     ",                // MariaDB's PAD SPACE collations ignore trailing spaces
      " admin",
      "admin\t",
      "admin\n",
      "ad\x7fmin",
      "admin\xc2\x85",
      "admin" + nbsp,
      nbsp + "admin",
      std::string(auth::kMaxLoginNameBytes + 1, 'a'),
      "admin\xff",
      ""};
  for (const std::string& variant : variants) {
    SCOPED_TRACE(::testing::PrintToString(variant));
    const LoginResult result = auth_->login(variant, kPassword, "127.0.0.1");
    EXPECT_EQ(result.status.code(), StatusCode::kInvalidArgument) << result.status.to_string();
    EXPECT_THAT(result.status.message(), ::testing::StartsWith("user: "));
    EXPECT_TRUE(result.session.empty());
  }
  EXPECT_EQ(auth_->login("admin", kPassword, "127.0.0.1").status.code(),
            StatusCode::kResourceExhausted);
}

TEST_P(AdminAuthTest, LookupsMatchTheStoredNameExactly) {
  // Straight at the repository, past the login's validation: no variant finds admin.
  const std::string variants[] = {
      std::string("admin\0", 6), "admin ", "admin     ", "Admin", "ADMIN", " admin"};
  for (const std::string& variant : variants) {
    SCOPED_TRACE(::testing::PrintToString(variant));
    EXPECT_EQ(accounts().get_user(variant).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(accounts().password_hash(variant).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(accounts().set_password_hash(variant, "x").code(), StatusCode::kNotFound);
    EXPECT_EQ(accounts().set_role(variant, "checkout", auth::Role::kOwner).code(),
              StatusCode::kNotFound);
  }
  EXPECT_EQ(accounts().delete_user("admin   ").code(), StatusCode::kNotFound);
  StatusOr<auth::User> admin = accounts().get_user("admin");
  ASSERT_TRUE(admin.ok()) << admin.status().to_string();
  EXPECT_TRUE(admin->admin);
  EXPECT_TRUE(admin->roles.empty());
  EXPECT_EQ(auth_->login("admin", kPassword, "127.0.0.1").status.code(), StatusCode::kOk);
}

TEST_P(AdminAuthTest, StoredNamesMustPassTheLoginRule) {
  StatusOr<std::string> hash = auth::hash_password(kPassword, kFastHash);
  ASSERT_TRUE(hash.ok());
  for (const std::string& name : {std::string("admin "), std::string("ad\tmin")}) {
    SCOPED_TRACE(name);
    const Status created = accounts().create_user({.name = name}, *hash);
    EXPECT_EQ(created.code(), StatusCode::kInvalidArgument) << created.to_string();
    EXPECT_THAT(created.message(), HasSubstr("user: "));
  }
}

TEST_P(AdminAuthTest, SessionPrincipalIsTheStoredUser) {
  const LoginResult login = auth_->login("dave", kPassword, "127.0.0.1");
  ASSERT_TRUE(login.status.ok()) << login.status.to_string();
  EXPECT_EQ(login.user.name, "dave");
  StatusOr<Principal> caller = auth_->authenticate(with_cookie("GET", login.session));
  ASSERT_TRUE(caller.ok()) << caller.status().to_string();
  EXPECT_EQ(caller->user.name, "dave");
  EXPECT_FALSE(caller->user.admin);
}

TEST_P(AdminAuthTest, PasswordChangedThroughAnotherPoolEndsTheSessions) {
  const std::string session = login(*auth_, "dave");
  ASSERT_TRUE(auth_->authenticate(with_cookie("GET", session)).ok());
  std::unique_ptr<db::SqlStores> cli = elsewhere();
  ASSERT_NE(cli, nullptr);
  StatusOr<std::string> hash = auth::hash_password(kOtherPassword, kFastHash);
  ASSERT_TRUE(hash.ok());
  ASSERT_TRUE(cli->accounts->set_password_hash("dave", *hash).ok());

  EXPECT_EQ(auth_->authenticate(with_cookie("GET", session)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth_->login("dave", kOtherPassword, "127.0.0.1").status.ok());
}

TEST_P(AdminAuthTest, SessionsOnOneServerEndWhenAnotherChangesThePassword) {
  std::unique_ptr<db::SqlStores> other = elsewhere();
  ASSERT_NE(other, nullptr);
  AdminAuth second_server(*other->accounts, clock_, options());
  const std::string here = login(*auth_, "dave");
  const std::string there = login(second_server, "dave");
  StatusOr<std::string> hash = auth::hash_password(kOtherPassword, kFastHash);
  ASSERT_TRUE(hash.ok());
  ASSERT_TRUE(other->accounts->set_password_hash("dave", *hash).ok());
  EXPECT_EQ(auth_->authenticate(with_cookie("GET", here)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(second_server.authenticate(with_cookie("GET", there)).status().code(),
            StatusCode::kUnauthenticated);
}

TEST_P(AdminAuthTest, RecreatedUserDoesNotInheritTheSessionsOfTheDeletedOne) {
  const std::string old_session = login(*auth_, "dave");
  std::unique_ptr<db::SqlStores> cli = elsewhere();
  ASSERT_NE(cli, nullptr);
  ASSERT_TRUE(cli->accounts->delete_user("dave").ok());
  StatusOr<std::string> hash = auth::hash_password(kPassword, kFastHash);
  ASSERT_TRUE(hash.ok());
  ASSERT_TRUE(cli->accounts->create_user({.name = "dave", .admin = true}, *hash).ok());

  StatusOr<Principal> old_caller = auth_->authenticate(with_cookie("GET", old_session));
  EXPECT_EQ(old_caller.status().code(), StatusCode::kUnauthenticated);
  // The same cookie stays refused, and the new dave logs in afresh as an admin.
  EXPECT_FALSE(auth_->authenticate(with_cookie("GET", old_session)).ok());
  StatusOr<Principal> new_caller = auth_->authenticate(with_cookie("GET", login(*auth_, "dave")));
  ASSERT_TRUE(new_caller.ok()) << new_caller.status().to_string();
  EXPECT_TRUE(new_caller->user.admin);
}

TEST_P(AdminAuthTest, RoleChangeEndsTheSessionsOfThatUserOnly) {
  const std::string dave = login(*auth_, "dave");
  const std::string admin = login(*auth_, "admin");
  std::unique_ptr<db::SqlStores> cli = elsewhere();
  ASSERT_NE(cli, nullptr);
  ASSERT_TRUE(cli->accounts->set_role("dave", "checkout", auth::Role::kOwner).ok());
  EXPECT_EQ(auth_->authenticate(with_cookie("GET", dave)).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth_->authenticate(with_cookie("GET", admin)).ok());
}

TEST_P(AdminAuthTest, UnrelatedAccountChangesKeepSessions) {
  const std::string dave = login(*auth_, "dave");
  std::unique_ptr<db::SqlStores> cli = elsewhere();
  ASSERT_NE(cli, nullptr);
  StatusOr<std::string> hash = auth::hash_password(kOtherPassword, kFastHash);
  ASSERT_TRUE(hash.ok());
  ASSERT_TRUE(cli->accounts->set_password_hash("admin", *hash).ok());
  ASSERT_TRUE(cli->accounts->create_app({.name = "mobile"}).ok());
  ASSERT_TRUE(cli->accounts->set_role("admin", "mobile", auth::Role::kViewer).ok());
  StatusOr<Principal> caller = auth_->authenticate(with_cookie("GET", dave));
  EXPECT_TRUE(caller.ok()) << caller.status().to_string();
}

}  // namespace
}  // namespace sluice::http
