// The library as its users see it: include/sluice/ and libsluice.so, on the memory store, on a
// real Redis, on a policy database, and through a real HTTP decision server.
#include "sluice/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "sluice/core/clock.h"
#include "sluice/db/stores.h"
#include "sluice/policy/document.h"
#include "sluice/policy/repository.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/metrics.h"
#include "sluice/server/http/server.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "testing/redis_cluster.h"
#include "testing/redis_server.h"

namespace sluice {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;

// Denials that no short wait outlasts, a lease, a pacing queue, a rate fast enough to wait for.
constexpr std::string_view kPolicies = R"(
- name: hourly
  apps: [web]
  limits: [{algorithm: fixed_window, limit: 2, window: 1h}]
- name: one.at.a.time
  apps: ["*"]
  limits: [{algorithm: concurrency, limit: 1, lease_ttl: 1m}]
- name: paced
  apps: ["*"]
  limits: [{algorithm: leaky_bucket, rate: 100, period: 1s, max_delay: 50ms}]
- name: fast
  apps: ["*"]
  limits: [{algorithm: token_bucket, capacity: 1, refill: 200, period: 1s}]
- name: metered
  apps: [web]
  max_debt: 50
  limits: [{algorithm: token_bucket, capacity: 100, refill: 1, period: 1h}]
)";

ClientOptions memory_options() {
  return {.store = "memory:", .app = "web", .policy_text = std::string(kPolicies)};
}

Client open_or_die(ClientOptions options) {
  StatusOr<Client> client = Client::open(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return std::move(*client);
}

std::string open_error(ClientOptions options) {
  StatusOr<Client> client = Client::open(std::move(options));
  return client.ok() ? "opened" : client.status().to_string();
}

TEST(ClientOptionsTest, EveryMistakeNamesItsOption) {
  ClientOptions no_app = memory_options();
  no_app.app.clear();
  EXPECT_EQ(open_error(no_app), "INVALID_ARGUMENT: app: must name the app this client speaks for");

  ClientOptions no_policies = memory_options();
  no_policies.policy_text.clear();
  EXPECT_EQ(open_error(no_policies),
            "INVALID_ARGUMENT: policy_text/policy_file/policy_database: name where the policies "
            "come from");

  ClientOptions two_sources = memory_options();
  two_sources.policy_file = "/nonexistent.yaml";
  EXPECT_EQ(open_error(two_sources),
            "INVALID_ARGUMENT: policy_text/policy_file/policy_database: name only one source of "
            "policies");

  ClientOptions remote_with_policies = memory_options();
  remote_with_policies.store = "http://127.0.0.1:8080";
  EXPECT_EQ(open_error(remote_with_policies),
            "INVALID_ARGUMENT: policy_text/policy_file/policy_database: an http:// store decides "
            "with the server's own policies");

  ClientOptions negative_spin = memory_options();
  negative_spin.blocking_spin = std::chrono::microseconds(-1);
  EXPECT_EQ(open_error(negative_spin), "INVALID_ARGUMENT: blocking_spin: must be >= 0");

  ClientOptions unknown_store = memory_options();
  unknown_store.store = "memcached://x";
  EXPECT_EQ(open_error(unknown_store),
            "INVALID_ARGUMENT: store: expected memory:, redis://…, redis+cluster://…, "
            "redis+sentinel://… (rediss for TLS) or http://…, not "
            "\"memcached://x\"");

  ClientOptions bad_redis = memory_options();
  bad_redis.store = "redis://127.0.0.1:99999";
  EXPECT_NE(open_error(bad_redis).find("INVALID_ARGUMENT: store: "), std::string::npos)
      << open_error(bad_redis);

  ClientOptions bad_port = {.store = "http://127.0.0.1:0", .app = "web"};
  EXPECT_EQ(open_error(bad_port), "INVALID_ARGUMENT: store: port must be 1 to 65535");

  ClientOptions bad_policy = memory_options();
  bad_policy.policy_text = "name: x\nlimits: [{algorithm: fixed_window, limit: 0, window: 1s}]";
  EXPECT_NE(open_error(bad_policy).find("limits[0].limit"), std::string::npos)
      << open_error(bad_policy);

  ClientOptions missing_file = memory_options();
  missing_file.policy_text.clear();
  missing_file.policy_file = "/nonexistent/policies.yaml";
  EXPECT_EQ(open_error(missing_file),
            "INVALID_ARGUMENT: cannot read policy file /nonexistent/policies.yaml");
}

// What every store must answer alike.
void expect_decisions(Client& client) {
  StatusOr<Decision> first = client.try_acquire("hourly", "alice");
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->verdict.allowed);
  EXPECT_EQ(first->verdict.remaining, 1);
  EXPECT_EQ(first->policy, "hourly");
  EXPECT_FALSE(first->degraded);
  ASSERT_TRUE(client.try_acquire("hourly", "alice")->verdict.allowed);

  // A wait shorter than the retry_after is answered at once, denied.
  StatusOr<Decision> denied = client.acquire("hourly", "alice", milliseconds(50));
  ASSERT_TRUE(denied.ok()) << denied.status().to_string();
  EXPECT_FALSE(denied->verdict.allowed);
  ASSERT_TRUE(denied->verdict.retry_after.has_value());
  EXPECT_GT(*denied->verdict.retry_after, 50'000);

  // A wait longer than the refill: allowed after waiting (5 ms at 200 per second).
  ASSERT_TRUE(client.try_acquire("fast", "bob")->verdict.allowed);
  StatusOr<Decision> waited = client.acquire("fast", "bob", milliseconds(500));
  ASSERT_TRUE(waited.ok()) << waited.status().to_string();
  EXPECT_TRUE(waited->verdict.allowed);

  StatusOr<Decision> unknown = client.try_acquire("no.such.policy", "alice");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  StatusOr<Decision> bad_cost = client.try_acquire("hourly", "carol", -1);
  EXPECT_EQ(bad_cost.status().code(), StatusCode::kInvalidArgument);
}

void expect_leases(Client& client) {
  StatusOr<Lease> held = client.lease("one.at.a.time", "job");
  ASSERT_TRUE(held.ok()) << held.status().to_string();
  ASSERT_TRUE(*held);
  EXPECT_FALSE(held->id().empty());
  {
    StatusOr<Lease> second = client.lease("one.at.a.time", "job");
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(*second);
    EXPECT_FALSE(second->decision().verdict.allowed);
    EXPECT_TRUE(second->id().empty());
  }
  EXPECT_TRUE(*held->renew());
  {
    Lease moved = std::move(*held);  // the guard moves; the lease stays held
    EXPECT_FALSE(*held);
    EXPECT_TRUE(moved);
  }  // released here
  StatusOr<Lease> again = client.lease("one.at.a.time", "job");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(*again);
  EXPECT_TRUE(*again->release());
  EXPECT_FALSE(*again);
  EXPECT_FALSE(*again->release());  // nothing held any more

  // By id, for leases taken with try_acquire.
  StatusOr<Decision> taken = client.try_acquire("one.at.a.time", "job");
  ASSERT_TRUE(taken.ok() && taken->lease.has_value());
  EXPECT_TRUE(*client.release("one.at.a.time", "job", *taken->lease));
  EXPECT_FALSE(*client.release("one.at.a.time", "job", *taken->lease));
  EXPECT_FALSE(*client.renew("one.at.a.time", "job", *taken->lease));
}

void expect_async(Client& client) {
  std::promise<StatusOr<Decision>> answered;
  client.acquire_async("hourly", "dave", {}, 1,
                       [&answered](StatusOr<Decision> d) { answered.set_value(std::move(d)); });
  StatusOr<Decision> decision = answered.get_future().get();
  ASSERT_TRUE(decision.ok()) << decision.status().to_string();
  EXPECT_TRUE(decision->verdict.allowed);

  std::promise<StatusOr<Decision>> refused;
  client.acquire_async("no.such.policy", "dave", {}, 1,
                       [&refused](StatusOr<Decision> d) { refused.set_value(std::move(d)); });
  EXPECT_EQ(refused.get_future().get().status().code(), StatusCode::kNotFound);
}

// Leaky-bucket pacing at 100 per second: turns are 10 ms apart, pace returns at the caller's turn,
// so three callers in a row act over at least 20 ms, each waiting at most one interval.
// Charge into debt, the debt bound, a debt delaying acquires, a refund capped at capacity. The
// bucket refills one unit per hour, so balances stay exact while a test runs.
void expect_quotas(Client& client) {
  StatusOr<Decision> charged = client.charge("metered", "tenant", 130);
  ASSERT_TRUE(charged.ok()) << charged.status().to_string();
  EXPECT_TRUE(charged->verdict.allowed);
  EXPECT_EQ(charged->verdict.balance, -30);
  EXPECT_EQ(charged->policy, "metered");
  StatusOr<Decision> refused = client.charge("metered", "tenant", 21);
  ASSERT_TRUE(refused.ok()) << refused.status().to_string();
  EXPECT_FALSE(refused->verdict.allowed) << "-51 passes max_debt 50";
  EXPECT_EQ(refused->verdict.balance, -30);
  EXPECT_FALSE(client.try_acquire("metered", "tenant")->verdict.allowed);
  StatusOr<Decision> refunded = client.refund("metered", "tenant", 200);
  ASSERT_TRUE(refunded.ok()) << refunded.status().to_string();
  EXPECT_EQ(refunded->verdict.balance, 100);
  EXPECT_TRUE(client.try_acquire("metered", "tenant")->verdict.allowed);  // balance 99
  // Reserve an estimate, settle with the actual: the difference comes back, once.
  StatusOr<Decision> reserved = client.reserve("metered", "tenant", 40);
  ASSERT_TRUE(reserved.ok()) << reserved.status().to_string();
  EXPECT_TRUE(reserved->verdict.allowed);
  EXPECT_EQ(reserved->verdict.balance, 59);
  ASSERT_TRUE(reserved->reservation.has_value());
  StatusOr<Decision> settled = client.settle("metered", "tenant", *reserved->reservation, 10);
  ASSERT_TRUE(settled.ok()) << settled.status().to_string();
  EXPECT_EQ(settled->verdict.balance, 89);
  EXPECT_EQ(client.settle("metered", "tenant", *reserved->reservation, 10).status().code(),
            StatusCode::kNotFound);
  EXPECT_FALSE(client.charge("one.at.a.time", "tenant", 1).ok()) << "leases are not charged";
  EXPECT_EQ(client.charge("nope", "tenant", 1).status().code(), StatusCode::kNotFound);
}

void expect_pacing(Client& client) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    const auto asked = std::chrono::steady_clock::now();
    StatusOr<Decision> turn = client.pace("paced", "queue", milliseconds(100));
    ASSERT_TRUE(turn.ok()) << turn.status().to_string();
    ASSERT_TRUE(turn->verdict.allowed);
    const Micros delay = turn->verdict.delay.value_or(0);
    EXPECT_LE(delay, 10'000);
    if (i > 0) {
      EXPECT_GT(delay, 0);
    }
    EXPECT_GE(
        std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - asked).count(),
        delay);
  }
  EXPECT_GE(
      std::chrono::duration_cast<microseconds>(std::chrono::steady_clock::now() - start).count(),
      20'000);

  std::promise<std::pair<StatusOr<Decision>, std::chrono::steady_clock::time_point>> paced;
  const auto asked = std::chrono::steady_clock::now();
  client.pace_async("paced", "queue", milliseconds(100), 1, [&paced](StatusOr<Decision> d) {
    paced.set_value({std::move(d), std::chrono::steady_clock::now()});
  });
  auto [decision, at] = paced.get_future().get();
  ASSERT_TRUE(decision.ok()) << decision.status().to_string();
  ASSERT_TRUE(decision->verdict.allowed);
  EXPECT_GE(std::chrono::duration_cast<microseconds>(at - asked).count(),
            decision->verdict.delay.value_or(0));
}

TEST(ClientTest, DecidesOnTheMemoryStore) {
  Client client = open_or_die(memory_options());
  expect_decisions(client);
  expect_leases(client);
  expect_async(client);
  expect_pacing(client);
  expect_quotas(client);
}

TEST(ClientTest, AppsAPolicyDoesNotListAreRefused) {
  ClientOptions options = memory_options();
  options.app = "mobile";
  Client client = open_or_die(options);
  EXPECT_EQ(client.try_acquire("hourly", "alice").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(client.try_acquire("fast", "alice")->verdict.allowed);  // apps: ["*"]
}

TEST(ClientTest, ReadsPoliciesFromAFileOrADirectory) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sluice-client-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "policies.yaml") << kPolicies;
  for (const std::string& path : {(dir / "policies.yaml").string(), dir.string()}) {
    Client client = open_or_die({.store = "memory:", .app = "web", .policy_file = path});
    EXPECT_TRUE(client.try_acquire("hourly", "alice")->verdict.allowed) << path;
  }
  std::filesystem::remove_all(dir);
}

TEST(ClientTest, FollowsAPolicyDatabase) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("sluice-client-test-" + std::to_string(::getpid()) + ".db");
  const std::string url = "sqlite://" + file.string();
  StatusOr<std::unique_ptr<policy::PolicyRepository>> repository = db::open_policy_repository(url);
  ASSERT_TRUE(repository.ok()) << repository.status().to_string();
  policy::ParsedPolicy first = policy::policy_from_text(
      "name: db.policy\napps: [web]\nlimits: [{algorithm: fixed_window, limit: 1, window: 1h}]");
  ASSERT_TRUE(first.policy.has_value());
  ASSERT_TRUE((*repository)->create(*first.policy, "test").ok());

  Client client = open_or_die({.store = "memory:",
                               .app = "web",
                               .policy_database = url,
                               .policy_refresh = milliseconds(10)});
  EXPECT_TRUE(client.try_acquire("db.policy", "alice")->verdict.allowed);
  EXPECT_FALSE(client.try_acquire("db.policy", "alice")->verdict.allowed);
  EXPECT_EQ(client.try_acquire("db.other", "alice").status().code(), StatusCode::kNotFound);

  // A policy created later is found once the cache has polled (10 ms here).
  policy::ParsedPolicy later = policy::policy_from_text(
      "name: db.other\napps: [web]\nlimits: [{algorithm: fixed_window, limit: 1, window: 1h}]");
  ASSERT_TRUE((*repository)->create(*later.policy, "test").ok());
  bool found = false;
  for (int i = 0; i < 500 && !found; ++i) {
    found = client.try_acquire("db.other", "alice").ok();
    if (!found) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_TRUE(found);
  std::filesystem::remove(file);
}

class ClientRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> redis = test::RedisServer::start();
    ASSERT_TRUE(redis.ok()) << redis.status().to_string();
    redis_ = std::move(*redis);
  }
  ClientOptions options() const {
    ClientOptions options = memory_options();
    options.store = "redis://127.0.0.1:" + std::to_string(redis_->port());
    options.store_timeout = milliseconds(300);
    return options;
  }
  std::unique_ptr<test::RedisServer> redis_;
};

TEST_F(ClientRedisTest, DecidesOnRedis) {
  Client client = open_or_die(options());
  expect_decisions(client);
  expect_leases(client);
  expect_async(client);
  expect_pacing(client);
  expect_quotas(client);
}

TEST_F(ClientRedisTest, TwoClientsShareOneLimit) {
  Client first = open_or_die(options());
  Client second = open_or_die(options());
  EXPECT_TRUE(first.try_acquire("hourly", "shared")->verdict.allowed);
  EXPECT_TRUE(second.try_acquire("hourly", "shared")->verdict.allowed);
  EXPECT_FALSE(first.try_acquire("hourly", "shared")->verdict.allowed);
}

TEST_F(ClientRedisTest, AnUnreachableRedisIsDecidedByTheFailureMode) {
  Client client = open_or_die(options());
  ASSERT_TRUE(client.try_acquire("hourly", "alice")->verdict.allowed);
  ASSERT_TRUE(redis_->stop().ok());
  StatusOr<Decision> decision = client.try_acquire("hourly", "alice");
  ASSERT_TRUE(decision.ok()) << decision.status().to_string();
  EXPECT_TRUE(decision->degraded);
  EXPECT_TRUE(decision->verdict.allowed);  // the default failure mode: fail_open

  // Callbacks still in flight run before the client is gone.
  std::atomic<int> answered{0};
  {
    Client closing = open_or_die(options());
    for (int i = 0; i < 20; ++i) {
      closing.acquire_async("hourly", "alice", {}, 1, [&answered](StatusOr<Decision> d) {
        EXPECT_TRUE(d.ok() && d->degraded);
        ++answered;
      });
    }
  }
  EXPECT_EQ(answered.load(), 20);
}

// The same calls on a Redis Cluster of three masters (redis+cluster://, one seed given).
TEST(ClientRedisClusterTest, DecidesOnARedisCluster) {
  StatusOr<std::unique_ptr<test::RedisCluster>> cluster =
      test::RedisCluster::start({.masters = 3, .replicas_per_master = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  ClientOptions options = memory_options();
  options.store = (*cluster)->url_with_one_seed();
  options.store_timeout = milliseconds(1000);
  Client client = open_or_die(options);
  expect_decisions(client);
  expect_leases(client);
  expect_async(client);
  expect_pacing(client);
}

// The remote backend against a real decision server on a free port.
class ClientRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
    ASSERT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
    lookup_ = std::make_unique<service::StaticPolicyLookup>(std::move(parsed.policies));
    limiter_ = std::make_unique<service::Limiter>(
        store_, &store_, service::LimiterOptions{.policies = lookup_.get()});
    api_ = std::make_unique<http::DecisionApi>(*limiter_, store_, metrics_);
    auto router = std::make_shared<http::Router>();
    api_->add_routes(*router);
    StatusOr<std::unique_ptr<http::HttpServer>> server =
        http::HttpServer::start({.port = 0, .io_threads = 1}, router);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
  }
  ClientOptions options() const {
    return {.store = "http://127.0.0.1:" + std::to_string(server_->port()), .app = "web"};
  }

  store::MemoryStore store_{SystemClock::instance()};
  std::unique_ptr<service::StaticPolicyLookup> lookup_;
  std::unique_ptr<service::Limiter> limiter_;
  http::Metrics metrics_;
  std::unique_ptr<http::DecisionApi> api_;
  std::unique_ptr<http::HttpServer> server_;
};

TEST_F(ClientRemoteTest, DecidesThroughTheServer) {
  Client client = open_or_die(options());
  expect_decisions(client);
  expect_leases(client);
  expect_async(client);
  expect_pacing(client);
  expect_quotas(client);
}

TEST_F(ClientRemoteTest, AnUnreachableServerIsAnError) {
  const std::uint16_t port = server_->port();
  server_.reset();
  Client client = open_or_die({.store = "http://127.0.0.1:" + std::to_string(port), .app = "web"});
  EXPECT_EQ(client.try_acquire("hourly", "alice").status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace sluice
