// Integration tests of the engines (script_engine.h) on a real redis-server: what each node is
// asked at connect and what it then runs; falling back when a node turns out to lack an engine;
// refusing an explicit engine that is absent, and a Redis whose scripts may not read TIME; and
// clock=client, including what a node's skewed clock does to the bounds (docs/redis.md).
// Users whose ACLs deny FUNCTION or TIME stand in for managed services that refuse them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/key.h"
#include "sluice/store/redis/hash_slot.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/eventually.h"
#include "testing/redis_cluster.h"
#include "testing/redis_server.h"

namespace sluice::store {
namespace {

using algorithm::FixedWindow;
using algorithm::Limit;
using algorithm::TokenBucket;

const Limit kFivePerMinute[] = {FixedWindow{.limit = 5, .window = 60 * kMicrosPerSecond}};

class EngineTest : public testing::Test {
 protected:
  void SetUp() override {
    // Users standing in for services that refuse FUNCTION, or TIME inside scripts (Redis 7 runs
    // a script's commands with its caller's permissions).
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start(
        {.extra_args = {"--user", "nofunction", "on", ">pw",    "~*", "&*", "+@all", "-function",
                        "--user", "notime",     "on", ">pw",    "~*", "&*", "+@all", "-time",
                        "--user", "default",    "on", "nopass", "~*", "&*", "+@all"}});
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
  }

  std::string url(std::string_view userinfo, std::string_view query) const {
    return "redis://" + std::string(userinfo) + "127.0.0.1:" + std::to_string(server_->port()) +
           (query.empty() ? "" : "?" + std::string(query));
  }

  static StatusOr<std::unique_ptr<RedisStore>> open(const std::string& url,
                                                    RedisStoreOptions options = {}) {
    return RedisStore::open(url, {.connect_timeout = 2 * kMicrosPerSecond}, options);
  }

  // A client of the test's own (no probe: plain commands).
  std::unique_ptr<redis::Multiplexer> admin() {
    StatusOr<std::unique_ptr<redis::Multiplexer>> admin =
        redis::Multiplexer::create({.port = server_->port()});
    EXPECT_TRUE(admin.ok());
    return admin.ok() ? std::move(*admin) : nullptr;
  }

  // How many times Redis ran `command` (INFO commandstats), 0 when it never did.
  std::int64_t calls_of(std::string_view command) {
    StatusOr<redis::Reply> info = admin()->command({"INFO", "commandstats"});
    EXPECT_TRUE(info.ok());
    if (!info.ok()) return -1;
    const std::string text = info->as_string();
    const std::string field = "cmdstat_" + std::string(command) + ":calls=";
    const std::size_t at = text.find(field);
    return at == std::string::npos ? 0 : std::stoll(text.substr(at + field.size()));
  }

  static SubjectRef ref(std::string_view subject) {
    return {.policy = "engine.test", .limits = kFivePerMinute, .subject = subject};
  }

  // Acquires until denied (at most 20): how many were allowed; -1 on an error.
  static int admitted(RedisStore& store, std::string_view subject) {
    for (int i = 0; i < 20; ++i) {
      StatusOr<Decision> decision = acquire_now(store, ref(subject), 1);
      if (!decision.ok()) {
        ADD_FAILURE() << decision.status().to_string();
        return -1;
      }
      if (!decision->verdict.allowed) return i;
    }
    return 20;
  }

  static std::string engine_of(RedisStore& store) {
    const auto engines = store.client().engines();
    return engines.size() == 1 ? std::string(redis::engine_name(engines[0].second)) : "?";
  }

  std::unique_ptr<test::RedisServer> server_;
};

TEST_F(EngineTest, AutoRunsRedisFunctionsWhereTheyAreAllowed) {
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("", ""));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ASSERT_TRUE((*store)->check_configuration().ok());
  EXPECT_EQ(engine_of(**store), "functions");
  EXPECT_EQ(admitted(**store, "alice"), 5);
  EXPECT_GE(calls_of("fcall"), 6);
  EXPECT_EQ(calls_of("evalsha"), 0);

  // The library is named after its content, so a second store (another node of the same version)
  // finds it in place instead of replacing it.
  StatusOr<redis::Reply> libraries = admin()->command({"FUNCTION", "LIST"});
  ASSERT_TRUE(libraries.ok());
  ASSERT_EQ(libraries->elements().size(), 1U);
  StatusOr<std::unique_ptr<RedisStore>> second = open(url("", ""));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(admitted(**second, "alice"), 0);  // the same limit, not a fresh one
  EXPECT_EQ(admin()->command({"FUNCTION", "LIST"})->elements().size(), 1U);
}

TEST_F(EngineTest, AUserDeniedFunctionRunsScriptsInstead) {
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("nofunction:pw@", ""));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ASSERT_TRUE((*store)->check_configuration().ok());
  EXPECT_EQ(engine_of(**store), "scripts");
  EXPECT_EQ(admitted(**store, "bob"), 5);
  EXPECT_EQ(calls_of("fcall"), 0);
}

TEST_F(EngineTest, AnExplicitEngineANodeLacksRefusesToStartNamingWhatIsMissing) {
  StatusOr<std::unique_ptr<RedisStore>> functions = open(url("nofunction:pw@", "engine=functions"));
  ASSERT_TRUE(functions.ok()) << functions.status().to_string();
  const Status refused = (*functions)->check_configuration();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  EXPECT_NE(refused.message().find("refused FUNCTION LOAD"), std::string::npos)
      << refused.to_string();
  EXPECT_NE(refused.message().find("engine=functions"), std::string::npos) << refused.to_string();

  StatusOr<std::unique_ptr<RedisStore>> module = open(url("", "engine=module"));
  ASSERT_TRUE(module.ok());
  const Status no_module = (*module)->check_configuration();
  EXPECT_EQ(no_module.code(), StatusCode::kFailedPrecondition) << no_module.to_string();
  EXPECT_NE(no_module.message().find("has no SLUICE.EVALUATE command"), std::string::npos)
      << no_module.to_string();
  EXPECT_NE(no_module.message().find("loadmodule"), std::string::npos) << no_module.to_string();

  // engine=scripts is always there.
  StatusOr<std::unique_ptr<RedisStore>> scripts = open(url("", "engine=scripts"));
  ASSERT_TRUE(scripts.ok());
  ASSERT_TRUE((*scripts)->check_configuration().ok());
  EXPECT_EQ(engine_of(**scripts), "scripts");
}

TEST_F(EngineTest, FunctionsLostFromUnderAConnectionFallBackWithoutAnError) {
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("", ""));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->check_configuration().ok());
  ASSERT_EQ(engine_of(**store), "functions");
  ASSERT_TRUE(admin()->command({"FUNCTION", "FLUSH"}).ok());
  // Every decision still comes back (the node is asked again at its next connect); the calls
  // that found no function were sent again as scripts and counted.
  EXPECT_EQ(admitted(**store, "carol"), 5);
  EXPECT_GE((*store)->client().stats().engine_fallbacks, 6U);
}

TEST_F(EngineTest, ARestartedRedisGetsTheLibraryAgainAtReconnect) {
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("", ""));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->check_configuration().ok());
  ASSERT_TRUE(server_->kill_hard().ok());
  const Status restarted = server_->restart();  // no persistence: functions and keys are gone
  ASSERT_TRUE(restarted.ok()) << restarted.to_string();
  // Calls fail while the connection is lost; once it is back, its probe has loaded the library
  // again before the first call, so no call needs a fallback.
  ASSERT_TRUE(test::eventually([&] { return acquire_now(**store, ref("dave-probe"), 0).ok(); },
                               std::chrono::seconds(10)));
  const std::uint64_t fallbacks = (*store)->client().stats().engine_fallbacks;
  EXPECT_EQ(admitted(**store, "dave"), 5);
  EXPECT_EQ((*store)->client().stats().engine_fallbacks, fallbacks);
  EXPECT_EQ(fallbacks, 0U);
  EXPECT_EQ(engine_of(**store), "functions");
  EXPECT_EQ(admin()->command({"FUNCTION", "LIST"})->elements().size(), 1U);
}

TEST_F(EngineTest, RedisRefusingTimeInScriptsIsRefusedAtStartWithTheRemedy) {
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("notime:pw@", ""));
  ASSERT_TRUE(store.ok());
  const Status refused = (*store)->check_configuration();
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.to_string();
  EXPECT_NE(refused.message().find("refuses TIME inside scripts"), std::string::npos)
      << refused.to_string();
  EXPECT_NE(refused.message().find("clock=client"), std::string::npos) << refused.to_string();
}

TEST_F(EngineTest, ClockClientDecidesOnRedisThatRefusesTime) {
  for (const char* engine : {"engine=functions", "engine=scripts"}) {
    SCOPED_TRACE(engine);
    StatusOr<std::unique_ptr<RedisStore>> store =
        open(url("notime:pw@", std::string(engine) + "&clock=client"));
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->check_configuration().ok());
    EXPECT_EQ(admitted(**store, std::string("erin-") + engine), 5);
  }
}

// A node whose clock runs ahead by d decides as if d later (docs/redis.md, "clock=client"):
// for a token bucket, up to rate × d more tokens (never more than its capacity) than a node in
// step would grant; for a fixed window, the next window opens d early, so up to one more
// window's limit within the last d of a window. Time is pinned: the "caller's time" is the same
// path clock=client takes, with a test clock instead of the system's.
TEST_F(EngineTest, ANodeWhoseClockRunsAheadAdmitsWithinTheStatedBound) {
  constexpr Micros kStart = 1'800'000'000'000'000;  // a whole minute
  constexpr Micros kAhead = 300 * kMicrosPerMilli;
  ManualClock in_step(kStart);
  ManualClock ahead(kStart + kAhead);
  StatusOr<std::unique_ptr<RedisStore>> a =
      open(url("notime:pw@", "clock=client"), {.pinned_clock_for_tests = &in_step});
  StatusOr<std::unique_ptr<RedisStore>> b =
      open(url("notime:pw@", "clock=client"), {.pinned_clock_for_tests = &ahead});
  ASSERT_TRUE(a.ok() && b.ok());

  // Token bucket: 10 per second, capacity 10. Node A empties it; node B, 300 ms ahead, finds
  // 10/s × 0.3 s = 3 tokens refilled. The bound: min(capacity, rate × d) = 3.
  const Limit bucket[] = {TokenBucket{.capacity = 10, .refill = 10, .period = kMicrosPerSecond}};
  const SubjectRef subject{.policy = "skew.bucket", .limits = bucket, .subject = "s"};
  int by_a = 0;
  int by_b = 0;
  while (by_a < 20 && acquire_now(**a, subject, 1)->verdict.allowed) ++by_a;
  while (by_b < 20 && acquire_now(**b, subject, 1)->verdict.allowed) ++by_b;
  EXPECT_EQ(by_a, 10);
  EXPECT_EQ(by_b, 3);

  // Fixed window: 5 per second. 200 ms before the window ends (in step), node A takes the 5;
  // node B, 300 ms ahead, is already in the next window and takes 5 more. The bound: one more
  // window's limit, and only within the last d of a window.
  const Limit window[] = {FixedWindow{.limit = 5, .window = kMicrosPerSecond}};
  const SubjectRef windowed{.policy = "skew.window", .limits = window, .subject = "w"};
  in_step.set(kStart + 800 * kMicrosPerMilli);
  ahead.set(kStart + 800 * kMicrosPerMilli + kAhead);
  by_a = 0;
  by_b = 0;
  while (by_a < 20 && acquire_now(**a, windowed, 1)->verdict.allowed) ++by_a;
  while (by_b < 20 && acquire_now(**b, windowed, 1)->verdict.allowed) ++by_b;
  EXPECT_EQ(by_a, 5);
  EXPECT_EQ(by_b, 5);
  // Earlier in the window (more than d before its end) the skew grants nothing extra.
  const SubjectRef early{.policy = "skew.window", .limits = window, .subject = "early"};
  in_step.set(kStart + 2 * kMicrosPerSecond + 100 * kMicrosPerMilli);
  ahead.set(kStart + 2 * kMicrosPerSecond + 100 * kMicrosPerMilli + kAhead);
  by_a = 0;
  by_b = 0;
  while (by_a < 20 && acquire_now(**a, early, 1)->verdict.allowed) ++by_a;
  while (by_b < 20 && acquire_now(**b, early, 1)->verdict.allowed) ++by_b;
  EXPECT_EQ(by_a + by_b, 5);
}

#ifdef SLUICE_MODULE_PATH
// The module (docs/redis-module.md), where it is built (not in sanitizer builds).

// A Redis restarted without `loadmodule`: the reconnect's probe finds no SLUICE.EVALUATE and the
// node runs Functions; no call fails on the missing command.
TEST_F(EngineTest, ARedisRestartedWithoutTheModuleRunsFunctionsWithoutAnError) {
  const std::uint16_t port = server_->port();
  server_.reset();
  StatusOr<std::unique_ptr<test::RedisServer>> with_module =
      test::RedisServer::start({.port = port, .extra_args = {"--loadmodule", SLUICE_MODULE_PATH}});
  ASSERT_TRUE(with_module.ok()) << with_module.status().to_string();
  server_ = std::move(*with_module);
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("", ""));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->check_configuration().ok());
  ASSERT_EQ(engine_of(**store), "module");
  EXPECT_EQ(admitted(**store, "frank"), 5);
  EXPECT_GE(calls_of("sluice.evaluate"), 6);

  ASSERT_TRUE(server_->kill_hard().ok());
  server_.reset();
  StatusOr<std::unique_ptr<test::RedisServer>> without = test::RedisServer::start({.port = port});
  ASSERT_TRUE(without.ok()) << without.status().to_string();
  server_ = std::move(*without);
  // A call written while its connection was coming back (before the probe) still names the
  // module: the node answers `unknown command`, and the call is answered through the scripts
  // (a fallback, not an error). Once a connection is back, none.
  ASSERT_TRUE(test::eventually([&] { return acquire_now(**store, ref("frank-probe"), 0).ok(); },
                               std::chrono::seconds(10)));
  const std::uint64_t fallbacks_while_reconnecting = (*store)->client().stats().engine_fallbacks;
  EXPECT_LE(fallbacks_while_reconnecting, 1U);
  EXPECT_EQ(engine_of(**store), "functions");
  EXPECT_EQ(admitted(**store, "frank"), 5);  // an empty Redis: a fresh budget
  EXPECT_EQ((*store)->client().stats().engine_fallbacks, fallbacks_while_reconnecting);
}

// The module reads Redis's clock without the TIME command: a Redis that refuses TIME in scripts
// serves through it with Redis's clock (no clock=client needed).
TEST_F(EngineTest, TheModuleDecidesOnRedisThatRefusesTimeInScripts) {
  const std::uint16_t port = server_->port();
  server_.reset();
  StatusOr<std::unique_ptr<test::RedisServer>> with_module = test::RedisServer::start(
      {.port = port,
       .extra_args = {"--loadmodule", SLUICE_MODULE_PATH, "--user", "notime", "on", ">pw", "~*",
                      "&*", "+@all", "-time"}});
  ASSERT_TRUE(with_module.ok()) << with_module.status().to_string();
  server_ = std::move(*with_module);
  StatusOr<std::unique_ptr<RedisStore>> store = open(url("notime:pw@", ""));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->check_configuration().ok());
  EXPECT_EQ(engine_of(**store), "module");
  EXPECT_EQ(admitted(**store, "grace"), 5);
}
#endif

#ifdef SLUICE_MODULE_PATH
// A Redis Cluster mid-rollout (docs/redis.md, "Rolling out the module"): the module on two of
// three masters. Each master runs its own engine, and a race of 300 callers on one key of each
// master admits exactly the limit, whatever engine decides it.
TEST(EngineClusterTest, AClusterMidRolloutRunsEachNodesEngineAndAdmitsExactlyTheLimit) {
  StatusOr<std::unique_ptr<test::RedisCluster>> cluster = test::RedisCluster::start(
      {.masters = 3, .replicas_per_master = 0, .extra_args = {"--enable-module-command", "yes"}});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  for (std::size_t i : {0U, 1U}) {
    StatusOr<std::string> loaded = (*cluster)->cli(i, {"MODULE", "LOAD", SLUICE_MODULE_PATH});
    ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  }
  StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::open((*cluster)->url());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ASSERT_TRUE((*store)->check_configuration().ok());

  // One subject per master: its keys' slot belongs to that master.
  const Limit limit[] = {FixedWindow{.limit = 50, .window = 60 * kMicrosPerSecond}};
  std::map<std::uint16_t, std::string> subject_of_master;
  for (int n = 0; subject_of_master.size() < 3 && n < 1000; ++n) {
    const std::string subject = "racer-" + std::to_string(n);
    const int slot = redis::key_hash_slot(redis_limit_key("engine.race", subject, 0));
    StatusOr<std::uint16_t> master = (*cluster)->master_of_slot(slot);
    ASSERT_TRUE(master.ok());
    subject_of_master.emplace(*master, subject);
  }
  ASSERT_EQ(subject_of_master.size(), 3U);
  // Every master is known, each with the engine its probe found.
  for (const auto& [port, subject] : subject_of_master) {
    ASSERT_TRUE(
        acquire_now(**store, {.policy = "engine.race", .limits = limit, .subject = subject}, 0)
            .ok());
  }
  // The first calls, before the slot map was read, may have gone to a seed of another engine and
  // been redirected (MOVED) to a node without the module: each such call falls back once. From
  // here on the map is known and no call may fall back.
  const std::uint64_t fallbacks_while_learning = (*store)->client().stats().engine_fallbacks;
  std::map<std::string, int> engines;
  for (const auto& [node, engine] : (*store)->client().engines())
    ++engines[std::string(redis::engine_name(engine))];
  EXPECT_EQ(engines["module"], 2);
  EXPECT_EQ(engines["functions"], 1);

  for (const auto& [port, subject] : subject_of_master) {
    SCOPED_TRACE("master on port " + std::to_string(port));
    const SubjectRef ref{.policy = "engine.race", .limits = limit, .subject = subject};
    std::atomic<int> allowed{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 300; ++t) {
      callers.emplace_back([&] {
        StatusOr<Decision> decision = acquire_now(**store, ref, 1);
        if (!decision.ok()) {
          ++failed;
        } else if (decision->verdict.allowed) {
          ++allowed;
        }
      });
    }
    for (std::thread& caller : callers) caller.join();
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(allowed.load(), 50);
  }
  EXPECT_EQ((*store)->client().stats().engine_fallbacks, fallbacks_while_learning);
}
#endif

}  // namespace
}  // namespace sluice::store
