// The SQL stores against every backend: SQLite (in memory and in a file), a real MariaDB and a
// real PostgreSQL, each started once for the whole binary on a free loopback port. Every test
// gets a fresh database.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <soci/soci.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <latch>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/db/database.h"
#include "sluice/db/migrations.h"
#include "sluice/db/stores.h"
#include "sluice/policy/document.h"
#include "sluice/policy/policy_cache.h"
#include "testing/redis_server.h"
#include "testing/sql_servers.h"

namespace sluice::policy {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;

#define ASSERT_OK(expr)                                                            \
  do {                                                                             \
    const auto& assert_ok_result = (expr);                                         \
    ASSERT_TRUE(assert_ok_result.ok()) << status_of(assert_ok_result).to_string(); \
  } while (false)
#define EXPECT_OK(expr)                                                            \
  do {                                                                             \
    const auto& expect_ok_result = (expr);                                         \
    EXPECT_TRUE(expect_ok_result.ok()) << status_of(expect_ok_result).to_string(); \
  } while (false)

Status status_of(const Status& status) { return status; }
template <typename T>
Status status_of(const StatusOr<T>& value) {
  return value.status();
}

using Backend = test::SqlBackend;
using test::SqlServers;

// Registered during static initialization, so GoogleTest tears it down after the last test.
[[maybe_unused]] SqlServers& kServers = SqlServers::get();

Policy make_policy(std::string name, std::vector<std::string> apps = {"checkout"}) {
  Policy policy;
  policy.name = std::move(name);
  policy.description = "checkout writes";
  policy.apps = std::move(apps);
  policy.limits = {
      algorithm::TokenBucket{.capacity = 100, .refill = 50, .period = kMicrosPerSecond},
      algorithm::FixedWindow{.limit = 1000, .window = kMicrosPerHour}};
  return policy;
}

std::vector<std::string> names(const std::vector<Policy>& policies) {
  std::vector<std::string> out;
  for (const Policy& policy : policies) out.push_back(policy.name);
  return out;
}

// Wraps a repository, counting calls; `fail` makes every call Unavailable.
class CountingRepository final : public PolicyRepository {
 public:
  explicit CountingRepository(std::shared_ptr<PolicyRepository> inner) : inner_(std::move(inner)) {}

  StatusOr<std::vector<Policy>> list(std::optional<std::string_view> app) override {
    ++lists;
    if (fail) return unavailable("injected failure");
    return inner_->list(app);
  }
  StatusOr<Policy> get(std::string_view name) override {
    ++gets;
    if (fail) return unavailable("injected failure");
    return inner_->get(name);
  }
  StatusOr<Policy> create(Policy policy, std::string_view actor) override {
    return inner_->create(std::move(policy), actor);
  }
  StatusOr<Policy> update(Policy policy, std::int64_t expected_version,
                          std::string_view actor) override {
    return inner_->update(std::move(policy), expected_version, actor);
  }
  Status remove(std::string_view name, std::int64_t expected_version,
                std::string_view actor) override {
    return inner_->remove(name, expected_version, actor);
  }
  StatusOr<std::vector<PolicyChange>> history(std::string_view name) override {
    return inner_->history(name);
  }
  Status import(const std::vector<Policy>& policies, std::string_view actor) override {
    return inner_->import(policies, actor);
  }
  StatusOr<std::int64_t> revision() override {
    ++revisions;
    if (fail) return unavailable("injected failure");
    return inner_->revision();
  }

  std::atomic<int> lists{0};
  std::atomic<int> gets{0};
  std::atomic<int> revisions{0};
  std::atomic<bool> fail{false};

 private:
  std::shared_ptr<PolicyRepository> inner_;
};

class RepositoryTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    StatusOr<std::string> url = SqlServers::get().fresh_url(GetParam());
    ASSERT_OK(url);
    url_ = *url;
    StatusOr<db::SqlStores> stores = db::open_sql_stores(url_, &clock_);
    ASSERT_OK(stores);
    stores_ = std::move(*stores);
  }

  PolicyRepository& repo() { return *stores_.policies; }
  auth::AccountRepository& accounts() { return *stores_.accounts; }
  std::int64_t revision() {
    StatusOr<std::int64_t> value = repo().revision();
    EXPECT_OK(value);
    return value.ok() ? *value : -1;
  }
  bool in_memory() const { return GetParam() == Backend::kSqliteMemory; }

  ManualClock clock_{kEpoch};
  std::string url_;
  db::SqlStores stores_;
};

INSTANTIATE_TEST_SUITE_P(Backends, RepositoryTest,
                         ::testing::Values(Backend::kSqliteMemory, Backend::kSqliteFile,
                                           Backend::kMariaDb, Backend::kPostgresql),
                         [](const ::testing::TestParamInfo<Backend>& test) {
                           return test::sql_backend_name(test.param);
                         });

// Issue 32 M1/M9: a token is inserted only while its issuer's generation is the one it was
// authenticated with and its user holds fewer than the cap, checked in the insert's transaction;
// a password change with kRevokeAll deletes the user's tokens in its own transaction.
TEST_P(RepositoryTest, TokenInsertsCheckTheIssuerAndTheCapInTheirTransaction) {
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash-1"));
  StatusOr<auth::User> bob = accounts().get_user("bob");
  ASSERT_OK(bob);
  const std::string secret_hash(64, 'f');
  const auth::TokenIssuer as_bob{.user = "bob", .generation = bob->generation};
  ASSERT_OK(accounts().insert_token({.id = "t1", .user = "bob", .secret_hash = secret_hash},
                                    {.issuer = as_bob, .max_tokens_per_user = 2}));
  ASSERT_OK(accounts().insert_token({.id = "t2", .user = "bob", .secret_hash = secret_hash},
                                    {.issuer = as_bob, .max_tokens_per_user = 2}));
  EXPECT_EQ(accounts()
                .insert_token({.id = "t3", .user = "bob", .secret_hash = secret_hash},
                              {.issuer = as_bob, .max_tokens_per_user = 2})
                .code(),
            StatusCode::kResourceExhausted);
  StatusOr<std::size_t> revoked =
      accounts().change_password_hash("bob", "hash-2", auth::TokenRevocation::kRevokeAll);
  ASSERT_OK(revoked);
  EXPECT_EQ(*revoked, 2u);
  // bob's old credential: refused, and nothing stored.
  EXPECT_EQ(
      accounts()
          .insert_token({.id = "t4", .user = "bob", .secret_hash = secret_hash}, {.issuer = as_bob})
          .code(),
      StatusCode::kAborted);
  EXPECT_EQ(accounts()
                .insert_token({.id = "t5", .user = "bob", .secret_hash = secret_hash},
                              {.issuer = auth::TokenIssuer{.user = "nobody", .generation = 1}})
                .code(),
            StatusCode::kAborted);
  StatusOr<std::vector<auth::TokenRecord>> left = accounts().list_tokens("bob");
  ASSERT_OK(left);
  EXPECT_TRUE(left->empty());
  StatusOr<std::size_t> kept =
      accounts().change_password_hash("bob", "hash-3", auth::TokenRevocation::kKeep);
  ASSERT_OK(kept);
  EXPECT_EQ(*kept, 0u);
}

// Issue 32 M9: a page of tokens reads only the page, in (created_at, id) order, resuming after a
// position; other users' tokens never appear.
TEST_P(RepositoryTest, TokenPagesResumeAfterAPositionInCreationOrder) {
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash-1"));
  ASSERT_OK(accounts().create_user({.name = "bobby"}, "hash-1"));
  const std::string secret_hash(64, 'f');
  // Two per instant, so the id breaks ties; created out of order.
  for (const auto& [id, at] : std::vector<std::pair<std::string, Micros>>{
           {"t5", 30}, {"t1", 10}, {"t3", 20}, {"t2", 10}, {"t4", 20}}) {
    ASSERT_OK(accounts().create_token(
        {.id = id, .user = "bob", .secret_hash = secret_hash, .created_at = kEpoch + at}));
  }
  ASSERT_OK(accounts().create_token({.id = "t0", .user = "bobby", .secret_hash = secret_hash}));
  std::vector<std::string> ids;
  std::optional<auth::TokenPosition> after;
  for (int page = 0; page < 5; ++page) {
    StatusOr<std::vector<auth::TokenRecord>> got = accounts().list_tokens_after("bob", after, 2);
    ASSERT_OK(got);
    EXPECT_LE(got->size(), 2u);
    if (got->empty()) break;
    for (const auth::TokenRecord& token : *got) ids.push_back(token.id);
    after = auth::TokenPosition{.created_at = got->back().created_at, .id = got->back().id};
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"t1", "t2", "t3", "t4", "t5"}));
  StatusOr<std::vector<auth::TokenRecord>> none = accounts().list_tokens_after("nobody", {}, 10);
  ASSERT_OK(none);
  EXPECT_TRUE(none->empty());
}

TEST_P(RepositoryTest, CreateStoresEveryFieldAndSetsTheAuditFields) {
  Policy policy = make_policy("orders.create", {"checkout", "mobile"});
  policy.mode = Mode::kShadow;
  policy.on_store_failure = FailureMode::kLocal;
  policy.enabled = false;
  policy.limits.push_back(algorithm::TokenBucket{.capacity = 10,
                                                 .refill = 5,
                                                 .period = 250 * kMicrosPerMilli,
                                                 .refill_mode = algorithm::RefillMode::kInterval,
                                                 .initial = 3});
  policy.limits.push_back(algorithm::Gcra{.rate = 7, .period = kMicrosPerMinute, .burst = 2});
  policy.limits.push_back(
      algorithm::LeakyBucket{.rate = 3, .period = kMicrosPerSecond, .max_delay = 1500});
  policy.limits.push_back(algorithm::SlidingWindow{.limit = 9, .window = kMicrosPerDay});
  policy.limits.push_back(algorithm::SlidingLog{.limit = 20, .window = 90 * kMicrosPerSecond});
  policy.limits.push_back(algorithm::Concurrency{.limit = 4, .lease_ttl = 30 * kMicrosPerSecond});
  // Audit fields are the repository's: whatever the caller sends is ignored.
  policy.version = 42;
  policy.created_by = "mallory";
  policy.created_at = 5;
  clock_.set(kEpoch + 7);

  StatusOr<Policy> created = repo().create(policy, "alice");
  ASSERT_OK(created);
  Policy expected = policy;
  expected.version = 1;
  expected.created_by = expected.updated_by = "alice";
  expected.created_at = expected.updated_at = kEpoch + 7;
  EXPECT_EQ(policy_to_json(*created), policy_to_json(expected));

  StatusOr<Policy> read = repo().get("orders.create");
  ASSERT_OK(read);
  EXPECT_EQ(policy_to_json(*read), policy_to_json(expected));

  StatusOr<std::vector<Policy>> all = repo().list();
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ(policy_to_json(all->front()), policy_to_json(expected));
}

TEST_P(RepositoryTest, ListSortsByNameAndFiltersByApp) {
  ASSERT_OK(repo().create(make_policy("b.policy", {"checkout"}), "alice"));
  ASSERT_OK(repo().create(make_policy("a.policy", {"*"}), "alice"));
  ASSERT_OK(repo().create(make_policy("c.policy", {"mobile", "checkout-v2"}), "alice"));
  ASSERT_OK(repo().create(make_policy("B.upper", {"mobile"}), "alice"));

  struct Case {
    std::optional<std::string> app;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {std::nullopt, {"B.upper", "a.policy", "b.policy", "c.policy"}},
      {"checkout", {"a.policy", "b.policy"}},
      {"mobile", {"B.upper", "a.policy", "c.policy"}},
      {"checkout-v2", {"a.policy", "c.policy"}},
      {"Checkout", {"a.policy"}},  // app names are case-sensitive on every backend
      {"nobody", {"a.policy"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.app.value_or("(all)"));
    StatusOr<std::vector<Policy>> listed =
        c.app ? repo().list(std::string_view(*c.app)) : repo().list();
    ASSERT_OK(listed);
    EXPECT_EQ(names(*listed), c.expected);
  }
  EXPECT_EQ(repo().get("A.POLICY").status().code(), StatusCode::kNotFound);
}

TEST_P(RepositoryTest, CreateRefusesAnExistingNameAndChangesNothing) {
  ASSERT_OK(repo().create(make_policy("orders.create"), "alice"));
  const std::int64_t before = revision();
  Policy again = make_policy("orders.create");
  again.description = "second";

  StatusOr<Policy> duplicate = repo().create(again, "bob");
  EXPECT_EQ(duplicate.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(duplicate.status().message(), "policy orders.create already exists");

  StatusOr<Policy> stored = repo().get("orders.create");
  ASSERT_OK(stored);
  EXPECT_EQ(stored->description, "checkout writes");
  EXPECT_EQ(stored->created_by, "alice");
  EXPECT_EQ(revision(), before);
  StatusOr<std::vector<PolicyChange>> history = repo().history("orders.create");
  ASSERT_OK(history);
  EXPECT_EQ(history->size(), 1u);
}

TEST_P(RepositoryTest, RefusesInvalidPoliciesNamingTheFieldAndStoresNothing) {
  struct Case {
    std::string label;
    Policy policy;
    std::string actor;
    std::string message_part;
  };
  Policy bad_name = make_policy("orders'; DROP TABLE policies; --");
  Policy no_limits = make_policy("no.limits");
  no_limits.limits.clear();
  Policy zero_capacity = make_policy("zero.capacity");
  zero_capacity.limits[0] = algorithm::TokenBucket{.capacity = 0, .refill = 1, .period = 1};
  Policy bad_app = make_policy("bad.app", {"check out"});
  Policy no_apps = make_policy("no.apps", {});
  Policy bad_utf8 = make_policy("bad.utf8");
  bad_utf8.description = "caf\xc3";
  const std::vector<Case> cases = {
      {"bad name", bad_name, "alice", "name:"},
      {"no limits", no_limits, "alice", "limits"},
      {"zero capacity", zero_capacity, "alice", "limits[0].capacity"},
      {"bad app", bad_app, "alice", "apps[0]"},
      {"no apps", no_apps, "alice", "apps"},
      {"invalid UTF-8", bad_utf8, "alice", "UTF-8"},
      {"empty actor", make_policy("ok.policy"), "", "actor: must not be empty"},
      {"actor with NUL", make_policy("ok.policy"), std::string("al\0ice", 6), "actor"},
      {"actor not UTF-8", make_policy("ok.policy"), "\xff", "actor: must be valid UTF-8"},
      {"actor too long", make_policy("ok.policy"), std::string(256, 'a'), "actor"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    StatusOr<Policy> created = repo().create(c.policy, c.actor);
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(created.status().message(), HasSubstr(c.message_part));
  }
  StatusOr<std::vector<Policy>> all = repo().list();
  ASSERT_OK(all);
  EXPECT_TRUE(all->empty());
  EXPECT_EQ(revision(), 0);
}

TEST_P(RepositoryTest, UpdateBumpsTheVersionAndKeepsTheCreationAudit) {
  clock_.set(kEpoch + 1);
  ASSERT_OK(repo().create(make_policy("orders.create"), "alice"));
  Policy changed = make_policy("orders.create", {"checkout", "mobile"});
  changed.description = "now for mobile too";
  clock_.set(kEpoch + 2);

  StatusOr<Policy> updated = repo().update(changed, 1, "bob");
  ASSERT_OK(updated);
  EXPECT_EQ(updated->version, 2);
  EXPECT_EQ(updated->created_by, "alice");
  EXPECT_EQ(updated->created_at, kEpoch + 1);
  EXPECT_EQ(updated->updated_by, "bob");
  EXPECT_EQ(updated->updated_at, kEpoch + 2);
  EXPECT_EQ(updated->description, "now for mobile too");

  StatusOr<Policy> read = repo().get("orders.create");
  ASSERT_OK(read);
  EXPECT_EQ(policy_to_json(*read), policy_to_json(*updated));

  clock_.set(kEpoch + 3);
  StatusOr<Policy> third = repo().update(changed, 2, "carol");  // same content: still a change
  ASSERT_OK(third);
  EXPECT_EQ(third->version, 3);
}

TEST_P(RepositoryTest, StaleUpdateIsAbortedAndChangesNothing) {
  ASSERT_OK(repo().create(make_policy("orders.create"), "alice"));
  Policy second = make_policy("orders.create");
  second.description = "second";
  StatusOr<Policy> current = repo().update(second, 1, "bob");
  ASSERT_OK(current);
  const std::int64_t before = revision();

  for (std::int64_t stale : {1, 3, 0, -1}) {
    SCOPED_TRACE(stale);
    Policy lost = make_policy("orders.create");
    lost.description = "would be lost";
    StatusOr<Policy> refused = repo().update(lost, stale, "carol");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kAborted);
    EXPECT_EQ(refused.status().message(),
              "conflict: policy orders.create is at version 2, not " + std::to_string(stale));
  }
  StatusOr<Policy> read = repo().get("orders.create");
  ASSERT_OK(read);
  EXPECT_EQ(policy_to_json(*read), policy_to_json(*current));
  EXPECT_EQ(revision(), before);
  StatusOr<std::vector<PolicyChange>> history = repo().history("orders.create");
  ASSERT_OK(history);
  EXPECT_EQ(history->size(), 2u);

  StatusOr<Policy> missing = repo().update(make_policy("no.such"), 1, "carol");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "policy no.such not found");
}

TEST_P(RepositoryTest, StaleDeleteIsAbortedAndDeleteKeepsTheHistory) {
  ASSERT_OK(repo().create(make_policy("orders.create"), "alice"));
  ASSERT_OK(repo().update(make_policy("orders.create"), 1, "bob"));
  const std::int64_t before = revision();

  Status stale = repo().remove("orders.create", 1, "carol");
  EXPECT_EQ(stale.code(), StatusCode::kAborted);
  EXPECT_EQ(stale.message(), "conflict: policy orders.create is at version 2, not 1");
  EXPECT_OK(repo().get("orders.create"));
  EXPECT_EQ(revision(), before);

  EXPECT_OK(repo().remove("orders.create", 2, "carol"));
  EXPECT_EQ(repo().get("orders.create").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(revision(), before + 1);
  EXPECT_EQ(repo().remove("orders.create", 2, "carol").code(), StatusCode::kNotFound);
  EXPECT_EQ(repo().remove("never.existed", 1, "carol").code(), StatusCode::kNotFound);

  StatusOr<std::vector<PolicyChange>> history = repo().history("orders.create");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ(history->back().action, ChangeAction::kDelete);
}

TEST_P(RepositoryTest, HistoryRecordsWhoWhenAndBothDocumentsOfEveryChange) {
  clock_.set(kEpoch + 10);
  StatusOr<Policy> created = repo().create(make_policy("orders.create"), "alice");
  ASSERT_OK(created);
  clock_.set(kEpoch + 20);
  Policy changed = make_policy("orders.create", {"mobile"});
  changed.mode = Mode::kShadow;
  StatusOr<Policy> updated = repo().update(changed, 1, "bob");
  ASSERT_OK(updated);
  clock_.set(kEpoch + 30);
  ASSERT_OK(repo().remove("orders.create", 2, "carol"));
  ASSERT_OK(repo().create(make_policy("other.policy"), "dave"));  // not in this history

  StatusOr<std::vector<PolicyChange>> history = repo().history("orders.create");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), 3u);
  const PolicyChange& c0 = (*history)[0];
  const PolicyChange& c1 = (*history)[1];
  const PolicyChange& c2 = (*history)[2];
  EXPECT_LT(c0.id, c1.id);
  EXPECT_LT(c1.id, c2.id);
  for (const PolicyChange& change : *history) EXPECT_EQ(change.policy, "orders.create");

  EXPECT_EQ(c0.action, ChangeAction::kCreate);
  EXPECT_EQ(c0.actor, "alice");
  EXPECT_EQ(c0.at, kEpoch + 10);
  EXPECT_EQ(c0.version, 1);
  EXPECT_FALSE(c0.old_document.has_value());
  ASSERT_TRUE(c0.new_document.has_value());
  EXPECT_EQ(*c0.new_document, policy_to_json(*created));

  EXPECT_EQ(c1.action, ChangeAction::kUpdate);
  EXPECT_EQ(c1.actor, "bob");
  EXPECT_EQ(c1.at, kEpoch + 20);
  EXPECT_EQ(c1.version, 2);
  ASSERT_TRUE(c1.old_document.has_value());
  ASSERT_TRUE(c1.new_document.has_value());
  EXPECT_EQ(*c1.old_document, policy_to_json(*created));
  EXPECT_EQ(*c1.new_document, policy_to_json(*updated));

  EXPECT_EQ(c2.action, ChangeAction::kDelete);
  EXPECT_EQ(c2.actor, "carol");
  EXPECT_EQ(c2.at, kEpoch + 30);
  EXPECT_EQ(c2.version, 0);
  ASSERT_TRUE(c2.old_document.has_value());
  EXPECT_EQ(*c2.old_document, policy_to_json(*updated));
  EXPECT_FALSE(c2.new_document.has_value());

  // Recreating the name continues the same history at version 1.
  ASSERT_OK(repo().create(make_policy("orders.create"), "erin"));
  history = repo().history("orders.create");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), 4u);
  EXPECT_EQ(history->back().version, 1);
  EXPECT_EQ(history->back().actor, "erin");

  for (std::string_view unknown : {"never.seen", "x' OR '1'='1", ""}) {
    StatusOr<std::vector<PolicyChange>> none = repo().history(unknown);
    ASSERT_OK(none);
    EXPECT_TRUE(none->empty()) << unknown;
  }
}

// Many writers doing read-modify-write with retries: every accepted update is in the history
// and in the final document, versions are consecutive, and each update's old document is the
// previous update's new document — no update is lost.
TEST_P(RepositoryTest, ConcurrentReadModifyWriteLosesNoUpdate) {
  ASSERT_OK(repo().create(make_policy("hot.policy"), "setup"));
  const std::int64_t start_revision = revision();
  constexpr int kThreads = 6;
  constexpr int kUpdatesPerThread = 8;
  std::atomic<int> accepted{0};
  std::atomic<int> conflicts{0};
  std::mutex errors_mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int u = 0; u < kUpdatesPerThread; ++u) {
        const std::string token = "[" + std::to_string(t) + "." + std::to_string(u) + "]";
        for (int attempt = 0;; ++attempt) {
          StatusOr<Policy> current = repo().get("hot.policy");
          Status status = current.status();
          if (current.ok()) {
            Policy next = *current;
            next.description += token;
            status = repo().update(next, current->version, "worker-" + std::to_string(t)).status();
            if (status.ok()) {
              ++accepted;
              break;
            }
          }
          if (status.code() == StatusCode::kAborted && attempt < 1000) {
            ++conflicts;
            continue;
          }
          std::lock_guard<std::mutex> lock(errors_mutex);
          errors.push_back(status.to_string());
          return;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(accepted.load(), kThreads * kUpdatesPerThread);

  StatusOr<Policy> final_policy = repo().get("hot.policy");
  ASSERT_OK(final_policy);
  EXPECT_EQ(final_policy->version, accepted.load() + 1);
  for (int t = 0; t < kThreads; ++t) {
    for (int u = 0; u < kUpdatesPerThread; ++u) {
      const std::string token = "[" + std::to_string(t) + "." + std::to_string(u) + "]";
      const std::string& text = final_policy->description;
      const std::size_t first = text.find(token);
      EXPECT_NE(first, std::string::npos) << token << " lost";
      EXPECT_EQ(text.find(token, first + 1), std::string::npos) << token << " applied twice";
    }
  }
  StatusOr<std::vector<PolicyChange>> history = repo().history("hot.policy");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), static_cast<std::size_t>(accepted.load() + 1));
  for (std::size_t i = 1; i < history->size(); ++i) {
    SCOPED_TRACE(i);
    const PolicyChange& change = (*history)[i];
    EXPECT_EQ(change.action, ChangeAction::kUpdate);
    EXPECT_EQ(change.version, static_cast<std::int64_t>(i + 1));
    ASSERT_TRUE(change.old_document && (*history)[i - 1].new_document);
    EXPECT_EQ(*change.old_document, *(*history)[i - 1].new_document);
  }
  EXPECT_EQ(*history->back().new_document, policy_to_json(*final_policy));
  EXPECT_EQ(revision(), start_revision + accepted.load());
  RecordProperty("conflicts", conflicts.load());
}

// Writers that all read the same version and then write at once: exactly one wins, every other
// one is refused as stale, and only the winner's change is stored.
TEST_P(RepositoryTest, RacingWritersOfOneVersionHaveExactlyOneWinner) {
  ASSERT_OK(repo().create(make_policy("contended"), "setup"));
  constexpr int kWriters = 6;
  std::latch all_read(kWriters);
  std::vector<Status> results(kWriters);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&, t] {
      StatusOr<Policy> current = repo().get("contended");
      all_read.arrive_and_wait();
      if (!current.ok()) {
        results[t] = current.status();
        return;
      }
      Policy next = *current;
      next.description = "writer " + std::to_string(t);
      results[t] = repo().update(next, current->version, "writer-" + std::to_string(t)).status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  int winner = -1;
  for (int t = 0; t < kWriters; ++t) {
    SCOPED_TRACE(t);
    if (results[t].ok()) {
      EXPECT_EQ(winner, -1) << "two writers of version 1 both succeeded";
      winner = t;
    } else {
      EXPECT_EQ(results[t].code(), StatusCode::kAborted) << results[t].to_string();
      EXPECT_EQ(results[t].message(), "conflict: policy contended is at version 2, not 1");
    }
  }
  ASSERT_NE(winner, -1);
  StatusOr<Policy> stored = repo().get("contended");
  ASSERT_OK(stored);
  EXPECT_EQ(stored->version, 2);
  EXPECT_EQ(stored->description, "writer " + std::to_string(winner));
  EXPECT_EQ(stored->updated_by, "writer-" + std::to_string(winner));
  StatusOr<std::vector<PolicyChange>> history = repo().history("contended");
  ASSERT_OK(history);
  EXPECT_EQ(history->size(), 2u);

  // The same for deletes racing an update.
  std::latch both(2);
  Status removed;
  Status updated;
  std::thread remover([&] {
    both.arrive_and_wait();
    removed = repo().remove("contended", 2, "remover");
  });
  std::thread updater([&] {
    both.arrive_and_wait();
    updated = repo().update(make_policy("contended"), 2, "updater").status();
  });
  remover.join();
  updater.join();
  EXPECT_NE(removed.ok(), updated.ok()) << removed.to_string() << " / " << updated.to_string();
  if (removed.ok()) {
    EXPECT_EQ(updated.code(), StatusCode::kNotFound);
    EXPECT_EQ(repo().get("contended").status().code(), StatusCode::kNotFound);
  } else {
    EXPECT_EQ(removed.code(), StatusCode::kAborted);
    StatusOr<Policy> after = repo().get("contended");
    ASSERT_OK(after);
    EXPECT_EQ(after->version, 3);
  }
}

TEST_P(RepositoryTest, ImportIsAllOrNothing) {
  ASSERT_OK(repo().create(make_policy("existing"), "alice"));
  ASSERT_OK(repo().update(make_policy("existing", {"mobile"}), 1, "alice"));
  StatusOr<Policy> existing = repo().get("existing");
  ASSERT_OK(existing);
  const std::int64_t before = revision();

  Policy fresh = make_policy("fresh.one");
  Policy changed = make_policy("existing", {"checkout", "mobile"});
  Policy invalid = make_policy("broken");
  invalid.limits[1] = algorithm::FixedWindow{.limit = 10, .window = 0};

  auto expect_nothing_changed = [&] {
    EXPECT_EQ(repo().get("fresh.one").status().code(), StatusCode::kNotFound);
    StatusOr<Policy> still = repo().get("existing");
    ASSERT_OK(still);
    EXPECT_EQ(policy_to_json(*still), policy_to_json(*existing));
    EXPECT_EQ(revision(), before);
    StatusOr<std::vector<PolicyChange>> history = repo().history("fresh.one");
    ASSERT_OK(history);
    EXPECT_TRUE(history->empty());
  };

  {
    SCOPED_TRACE("one invalid policy");
    Status status = repo().import({fresh, changed, invalid}, "importer");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("policies[2]: policy broken: limits[1].window"));
    expect_nothing_changed();
  }
  {
    SCOPED_TRACE("one stale version");
    Policy stale = changed;
    stale.version = 1;  // exported before the update to version 2
    Status status = repo().import({fresh, stale}, "importer");
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_THAT(status.message(), HasSubstr("conflict: policy existing is at version 2, not 1"));
    expect_nothing_changed();
  }
  {
    SCOPED_TRACE("a name twice");
    Status status = repo().import({fresh, fresh}, "importer");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("more than once"));
    expect_nothing_changed();
  }
  {
    SCOPED_TRACE("no actor");
    EXPECT_EQ(repo().import({fresh}, "").code(), StatusCode::kInvalidArgument);
    expect_nothing_changed();
  }

  Policy current_version = changed;
  current_version.version = 2;
  Policy unchanged = make_policy("unchanged.one");
  ASSERT_OK(repo().create(unchanged, "alice"));
  const std::int64_t base = revision();
  clock_.set(kEpoch + 99);
  ASSERT_OK(repo().import({fresh, current_version, unchanged}, "importer"));
  StatusOr<Policy> imported = repo().get("fresh.one");
  ASSERT_OK(imported);
  EXPECT_EQ(imported->version, 1);
  EXPECT_EQ(imported->created_by, "importer");
  EXPECT_EQ(imported->created_at, kEpoch + 99);
  StatusOr<Policy> updated = repo().get("existing");
  ASSERT_OK(updated);
  EXPECT_EQ(updated->version, 3);
  EXPECT_EQ(updated->apps, (std::vector<std::string>{"checkout", "mobile"}));
  EXPECT_EQ(updated->updated_by, "importer");
  StatusOr<Policy> untouched = repo().get("unchanged.one");
  ASSERT_OK(untouched);
  EXPECT_EQ(untouched->version, 1);  // identical content: no new version
  EXPECT_EQ(revision(), base + 2);

  // Re-importing the same documents changes nothing, even though "existing" carries version 2
  // and is now at 3: its content is what is stored.
  ASSERT_OK(repo().import({fresh, current_version, unchanged}, "importer"));
  EXPECT_EQ(revision(), base + 2);
  StatusOr<std::vector<PolicyChange>> history = repo().history("existing");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), 3u);
  EXPECT_EQ(history->back().actor, "importer");
  EXPECT_EQ(history->back().action, ChangeAction::kUpdate);
}

// SQL metacharacters, quotes, backslashes, control characters and non-ASCII text go in and come
// back byte for byte; names that could carry SQL are refused by validation, and lookups by such
// names simply find nothing.
TEST_P(RepositoryTest, StoresMetacharactersQuotesAndUnicodeVerbatim) {
  const std::vector<std::string> nasty = {
      "'; DROP TABLE policies; --",
      "\" OR \"1\"=\"1",
      "back\\slash \\' \\\" \\n \\0",
      "100% _under_score_ %s %d LIKE '%'",
      "emoji 🚦🙂 and 𝄞 (4-byte UTF-8)",
      "中文描述 — ünïcødé — עברית",
      "line1\nline2\ttab\rreturn",
      "$1 :name ? @p {x} ${y}",
      "`backtick` [bracket]",
      std::string("\x01\x1f\x7f control"),
      "",
  };
  std::string all;
  for (const std::string& text : nasty) all += text + "|";
  const std::string actor = "o'brien \"the admin\" 🙂; DROP TABLE users; --";

  Policy policy = make_policy("x.y-z_1", {"team-a.b_c", "*"});
  policy.description = all;
  StatusOr<Policy> created = repo().create(policy, actor);
  ASSERT_OK(created);
  StatusOr<Policy> read = repo().get("x.y-z_1");
  ASSERT_OK(read);
  EXPECT_EQ(read->description, all);
  EXPECT_EQ(read->created_by, actor);
  EXPECT_EQ(read->apps, (std::vector<std::string>{"team-a.b_c", "*"}));

  std::int64_t version = 1;
  for (const std::string& text : nasty) {
    SCOPED_TRACE(text);
    Policy next = policy;
    next.description = text;
    StatusOr<Policy> updated = repo().update(next, version, actor);
    ASSERT_OK(updated);
    version = updated->version;
    StatusOr<Policy> back = repo().get("x.y-z_1");
    ASSERT_OK(back);
    EXPECT_EQ(back->description, text);
  }
  StatusOr<std::vector<PolicyChange>> history = repo().history("x.y-z_1");
  ASSERT_OK(history);
  ASSERT_EQ(history->size(), nasty.size() + 1);
  EXPECT_EQ((*history)[0].actor, actor);
  EXPECT_EQ((*history)[0].new_document->at("description"), all);
  EXPECT_EQ((*history)[1].new_document->at("description"), nasty[0]);

  for (std::string_view hostile :
       {"x' OR '1'='1", "x.y-z_1' --", "x.y-z_1\"", "%", "_", "x.y-z_%"}) {
    SCOPED_TRACE(hostile);
    EXPECT_EQ(repo().get(hostile).status().code(), StatusCode::kNotFound);
    EXPECT_EQ(repo().remove(hostile, version, actor).code(), StatusCode::kNotFound);
  }
  StatusOr<std::vector<Policy>> listed = repo().list(std::string_view("team-a.b_c"));
  ASSERT_OK(listed);
  EXPECT_EQ(names(*listed), std::vector<std::string>{"x.y-z_1"});

  // Accounts: the same text in every free-text and identifier column.
  ASSERT_OK(accounts().create_app({.name = "team-a.b_c", .description = all}));
  const std::string user = "o'brien \"x\" 🙂; DROP TABLE users; --";
  ASSERT_OK(accounts().create_user({.name = user, .roles = {{"team-a.b_c", auth::Role::kOwner}}},
                                   "$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$'\"\\"));
  ASSERT_OK(accounts().create_token(
      {.id = "tok'\"\\%_", .user = user, .description = all, .secret_hash = std::string(64, 'a')}));
  StatusOr<auth::User> got = accounts().get_user(user);
  ASSERT_OK(got);
  EXPECT_EQ(got->name, user);
  EXPECT_EQ(got->roles.at("team-a.b_c"), auth::Role::kOwner);
  StatusOr<std::string> hash = accounts().password_hash(user);
  ASSERT_OK(hash);
  EXPECT_EQ(*hash, "$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$'\"\\");
  StatusOr<auth::TokenRecord> token = accounts().get_token("tok'\"\\%_");
  ASSERT_OK(token);
  EXPECT_EQ(token->description, all);
  EXPECT_EQ(token->user, user);
  EXPECT_EQ(accounts().get_token("tok%").status().code(), StatusCode::kNotFound);
  StatusOr<std::vector<auth::App>> apps = accounts().list_apps();
  ASSERT_OK(apps);
  ASSERT_EQ(apps->size(), 1u);
  EXPECT_EQ(apps->front().description, all);
}

TEST_P(RepositoryTest, RevisionIncreasesWithEveryCommittedChangeOnly) {
  EXPECT_EQ(revision(), 0);
  ASSERT_OK(repo().create(make_policy("a.policy"), "alice"));
  EXPECT_EQ(revision(), 1);
  EXPECT_OK(repo().get("a.policy"));
  EXPECT_OK(repo().list());
  EXPECT_OK(repo().history("a.policy"));
  EXPECT_FALSE(repo().create(make_policy("a.policy"), "alice").ok());
  EXPECT_FALSE(repo().update(make_policy("a.policy"), 7, "alice").ok());
  EXPECT_FALSE(repo().remove("a.policy", 7, "alice").ok());
  EXPECT_EQ(revision(), 1);
  ASSERT_OK(repo().update(make_policy("a.policy"), 1, "alice"));
  EXPECT_EQ(revision(), 2);
  ASSERT_OK(repo().import({make_policy("b.policy"), make_policy("c.policy")}, "alice"));
  EXPECT_EQ(revision(), 4);
  ASSERT_OK(repo().remove("a.policy", 2, "alice"));
  EXPECT_EQ(revision(), 5);
  // Accounts have their own counter.
  ASSERT_OK(accounts().create_app({.name = "checkout"}));
  EXPECT_EQ(revision(), 5);
}

TEST_P(RepositoryTest, MigrationsAreVersionedAndIdempotent) {
  db::Database& db = *stores_.database;
  const std::int64_t latest = db::schema_migrations().back().version;
  StatusOr<std::int64_t> version = db::schema_version(db);
  ASSERT_OK(version);
  EXPECT_EQ(*version, latest);
  StatusOr<int> again = db::apply_migrations(db);
  ASSERT_OK(again);
  EXPECT_EQ(*again, 0);

  // Opening the same URL again joins the open database.
  StatusOr<db::SqlStores> joined = db::open_sql_stores(url_, &clock_);
  ASSERT_OK(joined);
  EXPECT_EQ(joined->database.get(), stores_.database.get());

  ASSERT_OK(repo().create(make_policy("kept.policy"), "alice"));
  if (!in_memory()) {
    // A second, separate pool on the same database: nothing to migrate, the data is there.
    StatusOr<db::SqlStores> separate =
        db::open_sql_stores(url_, &clock_, {.pool_size = 1, .share = false});
    ASSERT_OK(separate);
    EXPECT_NE(separate->database.get(), stores_.database.get());
    EXPECT_OK(separate->policies->get("kept.policy"));
  }

  // A later migration is applied exactly once, in order after the existing ones.
  std::vector<db::Migration> extended(db::schema_migrations().begin(),
                                      db::schema_migrations().end());
  int runs = 0;
  extended.push_back({.version = latest + 1000,
                      .name = "test: an extra table",
                      .apply = [&runs](soci::session& session, db::Dialect) {
                        ++runs;
                        session << "CREATE TABLE extra_for_test (id BIGINT NOT NULL PRIMARY KEY)";
                      }});
  StatusOr<int> applied = db::apply_migrations(db, extended);
  ASSERT_OK(applied);
  EXPECT_EQ(*applied, 1);
  applied = db::apply_migrations(db, extended);
  ASSERT_OK(applied);
  EXPECT_EQ(*applied, 0);
  EXPECT_EQ(runs, 1);
  version = db::schema_version(db);
  ASSERT_OK(version);
  EXPECT_EQ(*version, latest + 1000);
  long long rows = 0;
  ASSERT_OK(db.run("counting", [&](soci::session& session) -> Status {
    session << "SELECT COUNT(*) FROM schema_migrations", soci::into(rows);
    return Status();
  }));
  EXPECT_EQ(rows, static_cast<long long>(extended.size()));

  // This build's list is now older than the database: refuse rather than guess.
  StatusOr<int> older = db::apply_migrations(db);
  EXPECT_EQ(older.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(older.status().message(), HasSubstr("newer than this Sluice"));
  if (!in_memory()) {
    EXPECT_EQ(db::open_sql_stores(url_, &clock_, {.share = false}).status().code(),
              StatusCode::kFailedPrecondition);
  }
  EXPECT_OK(repo().get("kept.policy"));  // a refused migration changed nothing
}

TEST_P(RepositoryTest, SimultaneousFirstOpensMigrateOnce) {
  if (in_memory()) GTEST_SKIP() << "each in-memory database has a single opener";
  StatusOr<std::string> url = SqlServers::get().fresh_url(GetParam());
  ASSERT_OK(url);
  constexpr int kOpeners = 4;
  std::vector<Status> results(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      results[i] = db::Database::open(*url, {.pool_size = 1, .share = false}).status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& status : results) EXPECT_OK(status);
  StatusOr<std::shared_ptr<db::Database>> db = db::Database::open(*url, {.share = false});
  ASSERT_OK(db);
  long long rows = 0;
  ASSERT_OK((*db)->run("counting", [&](soci::session& session) -> Status {
    session << "SELECT COUNT(*) FROM schema_migrations", soci::into(rows);
    return Status();
  }));
  EXPECT_EQ(rows, static_cast<long long>(db::schema_migrations().size()));
  StatusOr<std::int64_t> counter = (*db)->counter_value(db::Counter::kPolicies);
  ASSERT_OK(counter);
  EXPECT_EQ(*counter, 0);
}

TEST_P(RepositoryTest, AccountsUsersAppsRolesAndTokens) {
  using auth::Role;
  clock_.set(kEpoch + 5);
  ASSERT_OK(accounts().create_app({.name = "checkout", .description = "the shop"}));
  ASSERT_OK(accounts().create_app({.name = "mobile", .created_at = 123}));
  EXPECT_EQ(accounts().create_app({.name = "checkout"}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(accounts().create_app({.name = "bad app"}).code(), StatusCode::kInvalidArgument);
  StatusOr<std::vector<auth::App>> apps = accounts().list_apps();
  ASSERT_OK(apps);
  ASSERT_EQ(apps->size(), 2u);
  EXPECT_EQ(apps->at(0).name, "checkout");
  EXPECT_EQ(apps->at(0).description, "the shop");
  EXPECT_EQ(apps->at(0).created_at, kEpoch + 5);
  EXPECT_EQ(apps->at(1).name, "mobile");
  EXPECT_EQ(apps->at(1).created_at, 123);

  ASSERT_OK(accounts().create_user({.name = "alice", .admin = true}, "hash-a"));
  EXPECT_EQ(accounts().create_user({.name = "alice"}, "other").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(accounts().create_user({.name = ""}, "h").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      accounts().create_user({.name = "carol", .roles = {{"nope", Role::kOwner}}}, "h").code(),
      StatusCode::kNotFound);
  EXPECT_EQ(accounts().get_user("carol").status().code(), StatusCode::kNotFound);
  ASSERT_OK(accounts().create_user(
      {.name = "bob", .roles = {{"checkout", Role::kOwner}}, .created_at = 77}, "hash-b"));

  StatusOr<auth::User> alice = accounts().get_user("alice");
  ASSERT_OK(alice);
  EXPECT_TRUE(alice->admin);
  EXPECT_TRUE(alice->roles.empty());
  EXPECT_EQ(alice->created_at, kEpoch + 5);
  StatusOr<auth::User> bob = accounts().get_user("bob");
  ASSERT_OK(bob);
  EXPECT_FALSE(bob->admin);
  EXPECT_EQ(bob->created_at, 77);
  EXPECT_EQ(bob->roles, (std::map<std::string, Role>{{"checkout", Role::kOwner}}));

  StatusOr<std::string> hash = accounts().password_hash("bob");
  ASSERT_OK(hash);
  EXPECT_EQ(*hash, "hash-b");
  ASSERT_OK(accounts().set_password_hash("bob", "hash-b2"));
  hash = accounts().password_hash("bob");
  ASSERT_OK(hash);
  EXPECT_EQ(*hash, "hash-b2");
  EXPECT_EQ(accounts().set_password_hash("nobody", "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts().password_hash("nobody").status().code(), StatusCode::kNotFound);

  StatusOr<std::size_t> admins = accounts().count_admins();
  ASSERT_OK(admins);
  EXPECT_EQ(*admins, 1u);

  ASSERT_OK(accounts().set_role("bob", "mobile", Role::kViewer));
  ASSERT_OK(accounts().set_role("bob", "checkout", Role::kViewer));  // replaces owner
  bob = accounts().get_user("bob");
  ASSERT_OK(bob);
  EXPECT_EQ(bob->roles,
            (std::map<std::string, Role>{{"checkout", Role::kViewer}, {"mobile", Role::kViewer}}));
  ASSERT_OK(accounts().set_role("bob", "checkout", std::nullopt));
  ASSERT_OK(accounts().set_role("bob", "checkout", std::nullopt));  // idempotent
  EXPECT_EQ(accounts().set_role("bob", "no.app", Role::kOwner).code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts().set_role("nobody", "checkout", Role::kOwner).code(), StatusCode::kNotFound);
  StatusOr<std::vector<auth::User>> users = accounts().list_users();
  ASSERT_OK(users);
  ASSERT_EQ(users->size(), 2u);
  EXPECT_EQ(users->at(0).name, "alice");
  EXPECT_EQ(users->at(1).name, "bob");
  EXPECT_EQ(users->at(1).roles, (std::map<std::string, Role>{{"mobile", Role::kViewer}}));

  const std::string secret_hash(64, 'f');
  clock_.set(kEpoch + 6);
  ASSERT_OK(accounts().create_token(
      {.id = "tok2", .user = "bob", .description = "ci", .secret_hash = secret_hash}));
  clock_.set(kEpoch + 7);
  ASSERT_OK(accounts().create_token({.id = "tok1", .user = "bob", .secret_hash = secret_hash}));
  ASSERT_OK(accounts().create_token({.id = "tok3", .user = "alice", .secret_hash = secret_hash}));
  EXPECT_EQ(accounts().create_token({.id = "tok1", .user = "alice", .secret_hash = "x"}).code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(accounts().create_token({.id = "tok9", .user = "nobody", .secret_hash = "x"}).code(),
            StatusCode::kNotFound);
  StatusOr<auth::TokenRecord> token = accounts().get_token("tok2");
  ASSERT_OK(token);
  EXPECT_EQ(token->user, "bob");
  EXPECT_EQ(token->description, "ci");
  EXPECT_EQ(token->secret_hash, secret_hash);
  EXPECT_EQ(token->created_at, kEpoch + 6);
  StatusOr<std::vector<auth::TokenRecord>> tokens = accounts().list_tokens("bob");
  ASSERT_OK(tokens);
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ(tokens->at(0).id, "tok2");  // oldest first
  EXPECT_EQ(tokens->at(1).id, "tok1");
  ASSERT_OK(accounts().delete_token("tok1"));
  EXPECT_EQ(accounts().get_token("tok1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts().delete_token("tok1").code(), StatusCode::kNotFound);

  ASSERT_OK(accounts().delete_app("mobile"));
  EXPECT_EQ(accounts().delete_app("mobile").code(), StatusCode::kNotFound);
  bob = accounts().get_user("bob");
  ASSERT_OK(bob);
  EXPECT_TRUE(bob->roles.empty());

  ASSERT_OK(accounts().set_role("bob", "checkout", Role::kOwner));
  ASSERT_OK(accounts().delete_user("bob"));
  EXPECT_EQ(accounts().get_user("bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts().get_token("tok2").status().code(), StatusCode::kNotFound);
  tokens = accounts().list_tokens("bob");
  ASSERT_OK(tokens);
  EXPECT_TRUE(tokens->empty());
  EXPECT_EQ(accounts().delete_user("bob").code(), StatusCode::kNotFound);
  EXPECT_OK(accounts().get_token("tok3"));  // other users' tokens stay

  // A user created again under the name starts without the old roles.
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash"));
  bob = accounts().get_user("bob");
  ASSERT_OK(bob);
  EXPECT_TRUE(bob->roles.empty());
}

// Issue 16: two admins deleting each other at once both succeeded, leaving no admin, when the
// count was taken before the delete's transaction.
TEST_P(RepositoryTest, TheLastAdminIsNeverDeletedEvenByTwoAdminsDeletingEachOtherAtOnce) {
  ASSERT_OK(accounts().create_user({.name = "root", .admin = true}, "hash"));
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash"));
  const Status last = accounts().delete_user("root");
  EXPECT_EQ(last.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(last.message(), "refused: root is the last admin; make another first");
  ASSERT_OK(accounts().delete_user("bob"));  // not an admin: no count needed

  for (int round = 0; round < 10; ++round) {
    const std::string a = "a" + std::to_string(round);
    const std::string b = "b" + std::to_string(round);
    ASSERT_OK(accounts().create_user({.name = a, .admin = true}, "hash"));
    ASSERT_OK(accounts().create_user({.name = b, .admin = true}, "hash"));
    ASSERT_OK(accounts().delete_user("root"));  // a and b are admins now
    std::atomic<int> deleted{0};
    std::thread first([&] { deleted += accounts().delete_user(b).ok() ? 1 : 0; });
    std::thread second([&] { deleted += accounts().delete_user(a).ok() ? 1 : 0; });
    first.join();
    second.join();
    EXPECT_EQ(deleted, 1) << "round " << round;
    StatusOr<std::size_t> admins = accounts().count_admins();
    ASSERT_OK(admins);
    ASSERT_EQ(*admins, 1u) << "round " << round;
    // Back to one admin named root for the next round.
    const std::string survivor = accounts().get_user(a).ok() ? a : b;
    ASSERT_OK(accounts().create_user({.name = "root", .admin = true}, "hash"));
    ASSERT_OK(accounts().delete_user(survivor));
  }
}

TEST_P(RepositoryTest, UserGenerationMovesOnPasswordAndRoleChangesAndNeverRepeats) {
  ASSERT_OK(accounts().create_app({.name = "checkout"}));
  ASSERT_OK(accounts().create_user({.name = "dave"}, "hash-1"));
  auto generation = [this](const std::string& name) {
    StatusOr<auth::User> user = accounts().get_user(name);
    EXPECT_OK(user);
    return user.ok() ? user->generation : -1;
  };
  const std::int64_t created = generation("dave");
  ASSERT_OK(accounts().set_password_hash("dave", "hash-2"));
  const std::int64_t after_password = generation("dave");
  EXPECT_GT(after_password, created);
  ASSERT_OK(accounts().set_role("dave", "checkout", auth::Role::kViewer));
  const std::int64_t after_role = generation("dave");
  EXPECT_GT(after_role, after_password);
  // Changes to other accounts leave it alone.
  ASSERT_OK(accounts().create_user({.name = "erin"}, "hash"));
  ASSERT_OK(accounts().set_password_hash("erin", "hash-2"));
  EXPECT_EQ(generation("dave"), after_role);
  // Deleted and re-created: a generation no earlier dave had.
  ASSERT_OK(accounts().delete_user("dave"));
  ASSERT_OK(accounts().create_user({.name = "dave", .admin = true}, "hash-3"));
  EXPECT_GT(generation("dave"), after_role);
  StatusOr<std::vector<auth::User>> users = accounts().list_users();
  ASSERT_OK(users);
  ASSERT_EQ(users->size(), 2u);
  EXPECT_EQ(users->front().generation, generation("dave"));
}

TEST_P(RepositoryTest, GenerationMigrationRerunsOverAnExistingColumn) {
  // MySQL commits the ALTER at once: a migration interrupted before it was recorded runs again.
  ASSERT_OK(accounts().create_user({.name = "dave"}, "hash"));
  StatusOr<auth::User> before = accounts().get_user("dave");
  ASSERT_OK(before);
  ASSERT_OK(stores_.database->run("forgetting migrations 2 and later", [](soci::session& session) {
    // With the later ones (tokens.expires_at too): each re-runs over its existing column.
    session << "DELETE FROM schema_migrations WHERE version >= 2";
    return Status();
  }));
  StatusOr<int> applied = db::apply_migrations(*stores_.database);
  ASSERT_OK(applied);
  EXPECT_EQ(*applied, static_cast<int>(db::schema_migrations().size()) - 1);
  StatusOr<auth::User> after = accounts().get_user("dave");
  ASSERT_OK(after);
  EXPECT_EQ(after->generation, before->generation);
}

TEST_P(RepositoryTest, TokenExpiryIsStoredAndAUsersTokensAreRevokedTogether) {
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash"));
  ASSERT_OK(accounts().create_user({.name = "alice"}, "hash"));
  const std::string secret_hash(64, 'f');
  const Micros expiry = kEpoch + 30 * 24 * 3600 * kMicrosPerSecond;
  ASSERT_OK(accounts().create_token(
      {.id = "expiring", .user = "bob", .secret_hash = secret_hash, .expires_at = expiry}));
  ASSERT_OK(accounts().create_token({.id = "forever", .user = "bob", .secret_hash = secret_hash}));
  ASSERT_OK(accounts().create_token({.id = "alices", .user = "alice", .secret_hash = secret_hash}));
  StatusOr<auth::TokenRecord> expiring = accounts().get_token("expiring");
  ASSERT_OK(expiring);
  EXPECT_EQ(expiring->expires_at, expiry);
  StatusOr<auth::TokenRecord> forever = accounts().get_token("forever");
  ASSERT_OK(forever);
  EXPECT_EQ(forever->expires_at, std::nullopt);

  StatusOr<std::size_t> revoked = accounts().delete_user_tokens("bob");
  ASSERT_OK(revoked);
  EXPECT_EQ(*revoked, 2u);
  EXPECT_EQ(accounts().get_token("expiring").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(accounts().get_token("forever").status().code(), StatusCode::kNotFound);
  EXPECT_OK(accounts().get_token("alices"));
  revoked = accounts().delete_user_tokens("bob");
  ASSERT_OK(revoked);
  EXPECT_EQ(*revoked, 0u);
  EXPECT_EQ(accounts().delete_user_tokens("nobody").status().code(), StatusCode::kNotFound);
  // Names are exact on every backend: a padded variant is another (unknown) user.
  EXPECT_EQ(accounts().delete_user_tokens("alice ").status().code(), StatusCode::kNotFound);
  EXPECT_OK(accounts().get_token("alices"));
}

// A database of before tokens.expires_at (schema version 2, with a token in it) opened by this
// build: migration 3 adds the column and the token is kept, never expiring.
TEST_P(RepositoryTest, TokensOfASchemaWithoutExpiryUpgradeIntact) {
  ASSERT_OK(accounts().create_user({.name = "bob"}, "hash"));
  ASSERT_OK(stores_.database->run("going back to schema version 2", [](soci::session& session) {
    session << "DROP TABLE tokens";
    session << "DELETE FROM schema_migrations WHERE version >= 3";
    return Status();
  }));
  const db::Dialect dialect = stores_.database->dialect();
  ASSERT_OK(stores_.database->run("the version-1 tokens table", [&](soci::session& session) {
    db::schema_migrations()[0].apply(session, dialect);  // CREATE TABLE IF NOT EXISTS ...
    session << "INSERT INTO tokens (id, user_name, description, secret_hash, created_at) "
               "VALUES ('old', 'bob', 'from before', '" +
                   std::string(64, 'e') + "', 17)";
    return Status();
  }));
  StatusOr<std::int64_t> old_version = db::schema_version(*stores_.database);
  ASSERT_OK(old_version);
  EXPECT_EQ(*old_version, 2);

  std::shared_ptr<auth::AccountRepository> reopened;
  if (in_memory()) {
    StatusOr<int> applied = db::apply_migrations(*stores_.database);
    ASSERT_OK(applied);
    EXPECT_EQ(*applied, 1);
  } else {
    StatusOr<db::SqlStores> separate = db::open_sql_stores(url_, &clock_, {.share = false});
    ASSERT_OK(separate);
    reopened = std::move(separate->accounts);
  }
  auth::AccountRepository& upgraded = reopened ? *reopened : accounts();
  StatusOr<std::int64_t> new_version = db::schema_version(*stores_.database);
  ASSERT_OK(new_version);
  EXPECT_EQ(*new_version, db::schema_migrations().back().version);
  StatusOr<auth::TokenRecord> old = upgraded.get_token("old");
  ASSERT_OK(old);
  EXPECT_EQ(old->user, "bob");
  EXPECT_EQ(old->description, "from before");
  EXPECT_EQ(old->secret_hash, std::string(64, 'e'));
  EXPECT_EQ(old->created_at, 17);
  EXPECT_EQ(old->expires_at, std::nullopt);
  // And the new column takes values.
  ASSERT_OK(upgraded.create_token(
      {.id = "new", .user = "bob", .secret_hash = std::string(64, 'f'), .expires_at = kEpoch + 1}));
  StatusOr<auth::TokenRecord> fresh = upgraded.get_token("new");
  ASSERT_OK(fresh);
  EXPECT_EQ(fresh->expires_at, kEpoch + 1);
}

TEST_P(RepositoryTest, PoliciesAndAccountsOpenedSeparatelyShareTheDatabase) {
  StatusOr<std::unique_ptr<PolicyRepository>> policies = db::open_policy_repository(url_, &clock_);
  ASSERT_OK(policies);
  StatusOr<std::unique_ptr<auth::AccountRepository>> account_repo =
      db::open_account_repository(url_, &clock_);
  ASSERT_OK(account_repo);
  ASSERT_OK((*policies)->create(make_policy("shared.policy"), "alice"));
  ASSERT_OK((*account_repo)->create_app({.name = "checkout"}));
  EXPECT_OK(repo().get("shared.policy"));
  StatusOr<std::vector<auth::App>> apps = accounts().list_apps();
  ASSERT_OK(apps);
  EXPECT_EQ(apps->size(), 1u);
}

TEST_P(RepositoryTest, PolicyCacheServesLookupsByAppAndSeesChangesAfterRefresh) {
  ASSERT_OK(repo().create(make_policy("p1", {"checkout"}), "alice"));
  ASSERT_OK(repo().create(make_policy("p2", {"*"}), "alice"));
  Policy disabled = make_policy("p.disabled");
  disabled.enabled = false;
  ASSERT_OK(repo().create(disabled, "alice"));
  auto counting = std::make_shared<CountingRepository>(stores_.policies);
  StatusOr<std::unique_ptr<PolicyCache>> opened =
      PolicyCache::open(counting, {.poll_interval = std::chrono::milliseconds(0)});
  ASSERT_OK(opened);
  PolicyCache& cache = **opened;
  EXPECT_EQ(cache.snapshot()->revision, revision());

  EXPECT_NE(cache.find("checkout", "p1"), nullptr);
  EXPECT_EQ(cache.find("mobile", "p1"), nullptr);  // not listed: as if absent
  EXPECT_NE(cache.find("mobile", "p2"), nullptr);
  EXPECT_EQ(cache.find("checkout", "missing"), nullptr);
  EXPECT_NE(cache.find("p1"), nullptr);
  std::shared_ptr<const Policy> off = cache.find("checkout", "p.disabled");
  ASSERT_NE(off, nullptr);
  EXPECT_FALSE(off->enabled);

  // Lookups never touch the repository.
  const int lists = counting->lists;
  const int gets = counting->gets;
  const int revisions = counting->revisions;
  for (int i = 0; i < 1000; ++i) ASSERT_NE(cache.find("checkout", "p1"), nullptr);
  EXPECT_EQ(counting->lists, lists);
  EXPECT_EQ(counting->gets, gets);
  EXPECT_EQ(counting->revisions, revisions);

  // A refresh without changes reads only the revision.
  ASSERT_OK(cache.refresh_now());
  EXPECT_EQ(counting->lists, lists);
  EXPECT_EQ(counting->revisions, revisions + 1);

  std::shared_ptr<const PolicyCache::Snapshot> before = cache.snapshot();
  ASSERT_OK(repo().create(make_policy("p3", {"mobile"}), "alice"));
  ASSERT_OK(repo().update(make_policy("p1", {"mobile"}), 1, "bob"));
  ASSERT_OK(repo().remove("p2", 1, "bob"));
  EXPECT_NE(cache.find("checkout", "p1"), nullptr);  // not yet refreshed
  EXPECT_EQ(cache.find("mobile", "p3"), nullptr);

  ASSERT_OK(cache.refresh_now());
  EXPECT_EQ(cache.snapshot()->revision, revision());
  EXPECT_NE(cache.find("mobile", "p3"), nullptr);
  EXPECT_EQ(cache.find("checkout", "p1"), nullptr);
  std::shared_ptr<const Policy> p1 = cache.find("mobile", "p1");
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->version, 2);
  EXPECT_EQ(cache.find("mobile", "p2"), nullptr);
  // A snapshot held across the refresh is unchanged.
  EXPECT_NE(before->find("checkout", "p1"), nullptr);
  EXPECT_NE(before->find("mobile", "p2"), nullptr);
  EXPECT_EQ(before->find("mobile", "p3"), nullptr);

  // A failing repository keeps the last snapshot and reports the error.
  counting->fail = true;
  ASSERT_OK(repo().create(make_policy("p4", {"mobile"}), "alice"));
  EXPECT_EQ(cache.refresh_now().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cache.last_error().code(), StatusCode::kUnavailable);
  EXPECT_NE(cache.find("mobile", "p3"), nullptr);
  counting->fail = false;
  ASSERT_OK(cache.refresh_now());
  EXPECT_OK(cache.last_error());
  EXPECT_NE(cache.find("mobile", "p4"), nullptr);
}

TEST_P(RepositoryTest, PolicyCachePollingThreadPicksUpChanges) {
  StatusOr<std::unique_ptr<PolicyCache>> opened =
      PolicyCache::open(stores_.policies, {.poll_interval = std::chrono::milliseconds(2)});
  ASSERT_OK(opened);
  PolicyCache& cache = **opened;
  ASSERT_OK(repo().create(make_policy("polled", {"checkout"}), "alice"));
  const std::int64_t target = revision();
  // Waits on the cache's own condition, not for time: returns as soon as the poller publishes.
  ASSERT_TRUE(cache.wait_for_revision(target, std::chrono::seconds(60)));
  EXPECT_NE(cache.find("checkout", "polled"), nullptr);
}

TEST_P(RepositoryTest, ReconnectsAfterTheServerRestarts) {
  if (!test::is_sql_server(GetParam())) GTEST_SKIP() << "no server to restart";
  ASSERT_OK(repo().create(make_policy("survivor"), "alice"));
  ASSERT_OK(SqlServers::get().stop(GetParam()));
  StatusOr<Policy> down = repo().get("survivor");
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status().to_string();
  EXPECT_EQ(down.status().message().find(test::MariaDbServer::kPassword), std::string::npos);
  EXPECT_EQ(repo().create(make_policy("while.down"), "alice").status().code(),
            StatusCode::kUnavailable);
  ASSERT_OK(SqlServers::get().restart(GetParam()));

  // Each pooled connection that died with the server fails once (Unavailable) and is reopened.
  StatusOr<Policy> up = repo().get("survivor");
  for (std::size_t attempt = 0; !up.ok() && attempt < stores_.database->pool_size(); ++attempt) {
    EXPECT_EQ(up.status().code(), StatusCode::kUnavailable) << up.status().to_string();
    up = repo().get("survivor");
  }
  ASSERT_OK(up);
  EXPECT_OK(repo().update(make_policy("survivor"), 1, "alice"));
}

TEST(SqlStoreErrorsTest, UnreachableDatabasesAreUnavailableWithoutLeakingThePassword) {
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  ASSERT_OK(port);
  for (const std::string scheme : {"mysql", "postgresql"}) {
    SCOPED_TRACE(scheme);
    const std::string url =
        scheme + "://user:hunter2@127.0.0.1:" + std::to_string(*port) + "/sluice";
    StatusOr<std::unique_ptr<PolicyRepository>> repo = db::open_policy_repository(url);
    ASSERT_FALSE(repo.ok());
    EXPECT_EQ(repo.status().code(), StatusCode::kUnavailable) << repo.status().to_string();
    EXPECT_EQ(repo.status().message().find("hunter2"), std::string::npos)
        << repo.status().message();
    EXPECT_THAT(repo.status().message(), HasSubstr("user:***@127.0.0.1"));
  }
  StatusOr<std::unique_ptr<PolicyRepository>> missing_dir =
      db::open_policy_repository("sqlite:///nonexistent-dir-for-sluice-tests/x.db");
  EXPECT_EQ(missing_dir.status().code(), StatusCode::kUnavailable)
      << missing_dir.status().to_string();
  EXPECT_EQ(db::open_policy_repository("ftp://x/y").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(db::open_account_repository("sqlite:").status().code(), StatusCode::kInvalidArgument);
}

TEST(SqlStoreFileTest, NewSqliteFileIsReadableByItsOwnerOnlyWhateverTheUmask) {
  StatusOr<std::string> url = SqlServers::get().fresh_url(Backend::kSqliteFile);
  ASSERT_OK(url);
  const std::string path = url->substr(std::string_view("sqlite://").size());
  const mode_t old_umask = ::umask(0);  // the loosest: SQLite alone would create 0666
  StatusOr<db::SqlStores> stores = db::open_sql_stores(*url);
  ::umask(old_umask);
  ASSERT_OK(stores);
  ASSERT_OK(stores->accounts->create_app({.name = "checkout"}));  // a write: the WAL exists
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    SCOPED_TRACE(file);
    struct stat info {};
    ASSERT_EQ(::stat(file.c_str(), &info), 0) << std::strerror(errno);
    EXPECT_EQ(info.st_mode & 0777, 0600u);
  }
}

TEST(SqlStoreErrorsTest, InMemoryStoresOpenedTogetherShareOneDatabase) {
  StatusOr<db::SqlStores> first = db::open_sql_stores("sqlite::memory:");
  ASSERT_OK(first);
  ASSERT_OK(first->policies->create(make_policy("in.memory"), "alice"));
  StatusOr<std::unique_ptr<PolicyRepository>> second =
      db::open_policy_repository("sqlite::memory:");
  ASSERT_OK(second);
  EXPECT_OK((*second)->get("in.memory"));
  EXPECT_EQ(first->database->pool_size(), 1u);
}

}  // namespace
}  // namespace sluice::policy
