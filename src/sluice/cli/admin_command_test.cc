#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sluice/auth/passwords.h"
#include "sluice/auth/tokens.h"
#include "sluice/cli/cli_test_support.h"
#include "sluice/cli/command_support.h"
#include "sluice/core/duration.h"

namespace sluice::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class AdminCommandTest : public ::testing::Test, protected CliHarness {
 protected:
  // A user created directly in the fake (no hashing: these tests are about the commands).
  void add_user(const std::string& name, bool admin = false) {
    ASSERT_TRUE(accounts->create_user({.name = name, .admin = admin}, "unused").ok());
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
};

TEST_F(AdminCommandTest, InitCreatesTheFirstAdminWithAOneTimePasswordPrintedOnce) {
  const CliResult r = run({"admin", "init"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("created admin user admin"));
  EXPECT_THAT(r.err, HasSubstr("shown only now"));
  const std::string password = first_line(r.out);
  EXPECT_EQ(r.out, password + "\n");  // nothing else on stdout: scripts can capture it
  EXPECT_TRUE(auth::check_password_strength(password).ok());
  const StatusOr<auth::User> admin = accounts->get_user("admin");
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->admin);
  EXPECT_EQ(admin->created_at, kEpoch);
  const StatusOr<std::string> hash = accounts->password_hash("admin");
  ASSERT_TRUE(hash.ok());
  EXPECT_THAT(*hash, Not(HasSubstr(password)));
  EXPECT_TRUE(auth::verify_password(password, *hash).ok());
}

TEST_F(AdminCommandTest, InitIsRefusedOnceAnAdminExists) {
  add_user("root", /*admin=*/true);
  const CliResult r = run({"admin", "init", "--user", "other"});
  EXPECT_EQ(r.code, kExitConflict);
  EXPECT_THAT(r.err, HasSubstr("already has 1 admin(s)"));
  EXPECT_TRUE(r.out.empty());
  EXPECT_FALSE(accounts->get_user("other").ok());
}

TEST_F(AdminCommandTest, InitNeverUsesAFixedPassword) {
  CliHarness other;
  const CliResult a = run({"admin", "init"});
  const CliResult b = other.run({"admin", "init"});
  ASSERT_EQ(a.code, kExitOk);
  ASSERT_EQ(b.code, kExitOk);
  EXPECT_NE(a.out, b.out);
}

TEST_F(AdminCommandTest, UserAddChecksThePasswordFromStdinAndTheName) {
  const CliResult weak = run({"admin", "user", "add", "alice", "--password-stdin"}, "short\n");
  EXPECT_EQ(weak.code, kExitInvalid);
  EXPECT_THAT(weak.err, HasSubstr("password: must be at least 12 characters (got 5)"));
  EXPECT_FALSE(accounts->get_user("alice").ok());

  const CliResult bad_name = run({"admin", "user", "add", "al ice"});
  EXPECT_EQ(bad_name.code, kExitInvalid);
  EXPECT_THAT(bad_name.err, HasSubstr("user: must be 1-128 letters"));

  const CliResult ok =
      run({"admin", "user", "add", "alice@example.com", "--password-stdin"}, "a long passphrase\n");
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_TRUE(ok.out.empty());  // nothing secret to show
  EXPECT_TRUE(
      auth::verify_password("a long passphrase", *accounts->password_hash("alice@example.com"))
          .ok());
}

TEST_F(AdminCommandTest, UserListAndDeleteButNeverTheLastAdmin) {
  add_user("root", /*admin=*/true);
  add_user("bob");
  ASSERT_TRUE(accounts->create_app({.name = "checkout"}).ok());
  ASSERT_TRUE(accounts->set_role("bob", "checkout", auth::Role::kOwner).ok());
  const CliResult list = run({"admin", "user", "list"});
  EXPECT_EQ(list.code, kExitOk);
  EXPECT_THAT(list.out, HasSubstr("bob   no     checkout=owner"));
  EXPECT_THAT(run({"admin", "user", "list", "--format", "json"}).out,
              HasSubstr("\"checkout\": \"owner\""));

  const CliResult last = run({"admin", "user", "delete", "root"});
  EXPECT_EQ(last.code, kExitConflict);
  EXPECT_THAT(last.err, HasSubstr("root is the last admin"));
  EXPECT_EQ(run({"admin", "user", "delete", "bob"}).code, kExitOk);
  EXPECT_EQ(run({"admin", "user", "delete", "bob"}).code, kExitNotFound);
}

TEST_F(AdminCommandTest, RoleSetGrantsAndRevokes) {
  add_user("bob");
  EXPECT_EQ(run({"admin", "role", "set", "bob", "checkout", "owner"}).code, kExitNotFound);
  ASSERT_EQ(run({"admin", "app", "add", "checkout"}).code, kExitOk);
  const CliResult granted = run({"admin", "role", "set", "bob", "checkout", "viewer"});
  EXPECT_EQ(granted.code, kExitOk) << granted.err;
  EXPECT_EQ(accounts->get_user("bob")->roles.at("checkout"), auth::Role::kViewer);
  EXPECT_EQ(run({"admin", "role", "set", "bob", "checkout", "none"}).code, kExitOk);
  EXPECT_TRUE(accounts->get_user("bob")->roles.empty());
  EXPECT_EQ(run({"admin", "role", "set", "bob", "checkout", "god"}).code, 2);
}

TEST_F(AdminCommandTest, AppAddValidatesTheNameAndListShowsApps) {
  EXPECT_EQ(run({"admin", "app", "add", "*"}).code, kExitInvalid);
  EXPECT_EQ(run({"admin", "app", "add", "bad/name"}).code, kExitInvalid);
  ASSERT_EQ(run({"admin", "app", "add", "checkout", "--description", "the shop"}).code, kExitOk);
  EXPECT_EQ(run({"admin", "app", "add", "checkout"}).code, kExitConflict);
  const CliResult list = run({"admin", "app", "list"});
  EXPECT_EQ(list.out,
            "NAME      CREATED                      DESCRIPTION\n"
            "checkout  2023-11-14T22:13:20.000000Z  the shop\n");
}

// Every listing prints when each entry was created as ISO 8601 UTC with microseconds; --format
// json keeps the microseconds since the epoch the HTTP API returns.
TEST_F(AdminCommandTest, ListingsPrintCreationTimesAsIsoUtcWithMicroseconds) {
  clock.set(kEpoch + 123'456);
  ASSERT_EQ(run({"admin", "user", "add", "root", "--admin"}).code, kExitOk);
  clock.advance(kMicrosPerSecond);
  ASSERT_EQ(run({"admin", "app", "add", "checkout", "--description", "the shop"}).code, kExitOk);
  clock.advance(kMicrosPerMinute + 1);
  ASSERT_EQ(run({"admin", "user", "add", "bob"}).code, kExitOk);
  ASSERT_EQ(run({"admin", "role", "set", "bob", "checkout", "owner"}).code, kExitOk);
  clock.set(1'795'511'702'123'456);
  ASSERT_EQ(run({"admin", "token", "create", "--user", "bob", "--description", "deploys"}).code,
            kExitOk);
  const std::string id = accounts->list_tokens("bob")->at(0).id;

  const CliResult users = run({"admin", "user", "list"});
  EXPECT_EQ(users.code, kExitOk) << users.err;
  EXPECT_EQ(users.out,
            "NAME  ADMIN  ROLES           CREATED\n"
            "bob   no     checkout=owner  2023-11-14T22:14:21.123457Z\n"
            "root  yes    -               2023-11-14T22:13:20.123456Z\n");
  const CliResult apps = run({"admin", "app", "list"});
  EXPECT_EQ(apps.out,
            "NAME      CREATED                      DESCRIPTION\n"
            "checkout  2023-11-14T22:13:21.123456Z  the shop\n");
  const CliResult tokens = run({"admin", "token", "list"});
  EXPECT_EQ(tokens.out, "ID" + std::string(id.size(), ' ') +
                            "USER  CREATED                      EXPIRES  DESCRIPTION\n" + id +
                            "  bob   2026-11-24T09:15:02.123456Z  never    deploys\n");

  EXPECT_THAT(run({"admin", "user", "list", "--format", "json"}).out,
              HasSubstr("\"created_at\": 1700000061123457"));
  EXPECT_THAT(run({"admin", "app", "list", "--format", "json"}).out,
              HasSubstr("\"created_at\": 1700000001123456"));
  EXPECT_THAT(run({"admin", "token", "list", "--format", "json"}).out,
              HasSubstr("\"created_at\": 1795511702123456"));
}

TEST_F(AdminCommandTest, ListingsPrintADashForAnUnknownCreationTime) {
  add_user("legacy");  // created_at 0, as a row written before the column was filled
  EXPECT_EQ(run({"admin", "user", "list"}).out,
            "NAME    ADMIN  ROLES  CREATED\n"
            "legacy  no     -      -\n");
}

TEST_F(AdminCommandTest, TokenCreatePrintsTheTokenOnceAndStoresOnlyItsHash) {
  add_user("ci");
  const CliResult r = run({"admin", "token", "create", "--user", "ci", "--description", "deploys"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string token = first_line(r.out);
  const StatusOr<auth::TokenRecord> record = auth::verify_token(*accounts, token, clock.now());
  ASSERT_TRUE(record.ok()) << record.status().to_string();
  EXPECT_EQ(record->user, "ci");
  EXPECT_EQ(record->description, "deploys");

  const CliResult list = run({"admin", "token", "list"});
  EXPECT_THAT(list.out, HasSubstr(record->id));
  EXPECT_THAT(list.out, Not(HasSubstr(token.substr(token.rfind('_') + 1))));

  const CliResult revoked = run({"admin", "token", "revoke", record->id});
  EXPECT_EQ(revoked.code, kExitOk) << revoked.err;
  EXPECT_FALSE(auth::verify_token(*accounts, token, clock.now()).ok());
  EXPECT_EQ(run({"admin", "token", "revoke", record->id}).code, kExitNotFound);
}

TEST_F(AdminCommandTest, TokenCreateWithAnExpiryIsRefusedFromThatInstantAndListedSo) {
  add_user("ci");
  const CliResult r = run({"admin", "token", "create", "--user", "ci", "--expires-in", "30d"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const std::string token = first_line(r.out);
  const Micros expiry = clock.now() + 30 * 24 * 3600 * kMicrosPerSecond;
  EXPECT_THAT(r.err, HasSubstr("expires " + format_timestamp(expiry)));
  StatusOr<auth::TokenRecord> record = auth::verify_token(*accounts, token, expiry - 1);
  ASSERT_TRUE(record.ok()) << record.status().to_string();
  EXPECT_EQ(record->expires_at, expiry);
  EXPECT_EQ(auth::verify_token(*accounts, token, expiry).status(),
            (Status{StatusCode::kUnauthenticated, "token expired"}));
  EXPECT_THAT(run({"admin", "token", "list"}).out, HasSubstr(format_timestamp(expiry)));
  EXPECT_THAT(run({"admin", "token", "list", "--format", "json"}).out,
              HasSubstr("\"expires_at\": " + std::to_string(expiry)));
  clock.set(expiry);
  EXPECT_THAT(run({"admin", "token", "list"}).out,
              HasSubstr(format_timestamp(expiry) + " (expired)"));

  const CliResult at =
      run({"admin", "token", "create", "--user", "ci", "--expires-at", "2099-01-01T00:00:00Z"});
  ASSERT_EQ(at.code, kExitOk) << at.err;
  EXPECT_THAT(at.err, HasSubstr("expires 2099-01-01T00:00:00.000000Z"));
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--expires-in", "30 days"},
        std::vector<std::string>{"--expires-in", "0s"},
        std::vector<std::string>{"--expires-at", "2001-01-01T00:00:00Z"},
        std::vector<std::string>{"--expires-at", "tomorrow"},
        std::vector<std::string>{"--expires-in", "1d", "--expires-at", "2099-01-01T00:00:00Z"}}) {
    std::vector<std::string> args = {"admin", "token", "create", "--user", "ci"};
    args.insert(args.end(), bad.begin(), bad.end());
    const CliResult refused = run(args);
    SCOPED_TRACE(bad.front() + " " + bad[1]);
    EXPECT_EQ(refused.code, kExitInvalid);
    EXPECT_THAT(refused.err, HasSubstr(bad.size() > 2 ? "--expires-at" : bad.front()));
  }
}

TEST_F(AdminCommandTest, UserPasswordRevokesTheUsersTokensUnlessKeepTokens) {
  add_user("ci");
  add_user("other");
  const std::string first = first_line(run({"admin", "token", "create", "--user", "ci"}).out);
  const std::string others = first_line(run({"admin", "token", "create", "--user", "other"}).out);
  const CliResult kept = run({"admin", "user", "password", "ci", "--keep-tokens"});
  ASSERT_EQ(kept.code, kExitOk) << kept.err;
  EXPECT_TRUE(auth::verify_token(*accounts, first, clock.now()).ok());
  const CliResult reset = run({"admin", "user", "password", "ci"});
  ASSERT_EQ(reset.code, kExitOk) << reset.err;
  EXPECT_THAT(reset.err, HasSubstr("revoked 1 API token of ci"));
  EXPECT_EQ(auth::verify_token(*accounts, first, clock.now()).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth::verify_token(*accounts, others, clock.now()).ok());
}

TEST_F(AdminCommandTest, TokenCreateNeedsAnOwner) {
  const CliResult r = run({"admin", "token", "create"});
  EXPECT_EQ(r.code, kExitInvalid);
  EXPECT_THAT(r.err, HasSubstr("--user: required"));
}

TEST_F(AdminCommandTest, AsANonAdminOnlyOwnTokensAndOwnPassword) {
  add_user("root", /*admin=*/true);
  add_user("bob");
  add_user("carol");
  const CliResult add = run({"admin", "user", "add", "eve", "--as", "bob"});
  EXPECT_EQ(add.code, kExitPermission);
  EXPECT_THAT(add.err, HasSubstr("bob may not manage users: admin only"));
  EXPECT_EQ(run({"admin", "app", "add", "x", "--as", "bob"}).code, kExitPermission);
  EXPECT_EQ(run({"admin", "role", "set", "bob", "x", "owner", "--as", "bob"}).code,
            kExitPermission);
  EXPECT_EQ(run({"admin", "user", "list", "--as", "bob"}).code, kExitPermission);

  const CliResult own = run({"admin", "token", "create", "--as", "bob"});
  EXPECT_EQ(own.code, kExitOk) << own.err;
  const CliResult theirs = run({"admin", "token", "create", "--user", "carol", "--as", "bob"});
  EXPECT_EQ(theirs.code, kExitPermission);
  ASSERT_EQ(run({"admin", "token", "create", "--user", "carol"}).code, kExitOk);
  const CliResult list = run({"admin", "token", "list", "--as", "bob"});
  EXPECT_THAT(list.out, HasSubstr("bob"));
  EXPECT_THAT(list.out, Not(HasSubstr("carol")));
  const std::string carols = accounts->list_tokens("carol")->at(0).id;
  EXPECT_EQ(run({"admin", "token", "revoke", carols, "--as", "bob"}).code, kExitPermission);
  EXPECT_EQ(run({"admin", "token", "revoke", carols, "--as", "root"}).code, kExitOk);

  EXPECT_EQ(run({"admin", "user", "password", "carol", "--as", "bob"}).code, kExitPermission);
  const CliResult self =
      run({"admin", "user", "password", "bob", "--as", "bob", "--password-stdin"},
          "bob's new passphrase\n");
  EXPECT_EQ(self.code, kExitOk) << self.err;
  EXPECT_TRUE(auth::verify_password("bob's new passphrase", *accounts->password_hash("bob")).ok());
}

TEST_F(AdminCommandTest, EveryCommandHasHelp) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"admin", "--help"},
                                               {"admin", "init", "--help"},
                                               {"admin", "user", "--help"},
                                               {"admin", "user", "add", "--help"},
                                               {"admin", "role", "set", "--help"},
                                               {"admin", "app", "--help"},
                                               {"admin", "token", "create", "--help"},
                                               {"admin", "token", "revoke", "--help"}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.code, 0) << args[1];
    EXPECT_THAT(r.out, HasSubstr("Usage")) << args[1];
  }
}

}  // namespace
}  // namespace sluice::cli
