// Replays every conformance trace on a real redis-server through the Lua scripts, with time
// pinned to the trace's instants, on a standalone server and on a Redis Cluster. Same traces, same
// expectations as the memory store.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_cluster.h"
#include "testing/redis_server.h"
#include "trace.h"

namespace sluice::conformance {
namespace {

// A redis-server shared by a suite's traces, started with Server::args().
template <typename Server>
class RedisServerSuite : public testing::TestWithParam<std::filesystem::path> {
 protected:
  static void SetUpTestSuite() {
    StatusOr<std::unique_ptr<sluice::test::RedisServer>> server =
        sluice::test::RedisServer::start({.extra_args = Server::args()});
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // Replays the trace through a store on `engine=<engine>` (RedisStore::open, so each node is
  // probed as in production), then checks that the node ran that engine throughout.
  void replay_through(std::string_view engine, redis::ScriptEngine expected,
                      redis::MultiplexerOptions base = {}) {
    ASSERT_NE(server_, nullptr);
    ManualClock clock(0);
    StatusOr<std::unique_ptr<store::RedisStore>> store = store::RedisStore::open(
        "redis://127.0.0.1:" + std::to_string(server_->port()) + "?engine=" + std::string(engine),
        std::move(base), {.pinned_clock_for_tests = &clock});
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    ASSERT_TRUE((*store)->client().command({"FLUSHALL"}).ok());
    const std::vector<std::string> problems =
        replay(load_trace(GetParam()), **store, [&](Micros now) { clock.set(now); });
    for (const std::string& problem : problems) ADD_FAILURE() << problem;
    const auto engines = (*store)->client().engines();
    ASSERT_EQ(engines.size(), 1U);
    EXPECT_EQ(engines[0].second, expected);
    EXPECT_EQ((*store)->client().stats().engine_fallbacks, 0U);
  }

  static sluice::test::RedisServer* server_;
};

template <typename Server>
sluice::test::RedisServer* RedisServerSuite<Server>::server_ = nullptr;

struct PlainRedis {
  static std::vector<std::string> args() { return {}; }
};
using RedisConformanceTest = RedisServerSuite<PlainRedis>;

TEST_P(RedisConformanceTest, ReplaysTraceExactly) {
  ASSERT_NE(server_, nullptr);
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::create({.port = server_->port()});
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  ASSERT_TRUE((*client)->command({"FLUSHALL"}).ok());
  ManualClock clock(0);
  store::RedisStore store(std::shared_ptr<redis::Multiplexer>(std::move(*client)),
                          {.pinned_clock_for_tests = &clock});
  const std::vector<std::string> problems =
      replay(load_trace(GetParam()), store, [&](Micros now) { clock.set(now); });
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

// The same traces through Redis Functions (engine=functions): the library holds the very
// scripts, so the same expectations hold.
TEST_P(RedisConformanceTest, ReplaysTraceExactlyThroughRedisFunctions) {
  replay_through("functions", redis::ScriptEngine::kFunctions);
}

#ifdef SLUICE_MODULE_PATH
// The same traces through the sluice.so module (engine=module), loaded with its test-only
// pinned clock so each call's last argument is the trace's instant (docs/redis-module.md): the
// module decides with the memory store's code, in the scripts' encoding, so the same
// expectations hold. Quota operations have no module command yet (SLUICE.QUOTA): they go to
// quota.lua, on the same keys.
struct RedisWithTheModule {
  static std::vector<std::string> args() {
    return {"--loadmodule", SLUICE_MODULE_PATH, "pinned-clock"};
  }
};
using RedisModuleConformanceTest = RedisServerSuite<RedisWithTheModule>;

TEST_P(RedisModuleConformanceTest, ReplaysTraceExactlyThroughTheModule) {
  redis::MultiplexerOptions base;
  base.engine.module_reads_caller_time = true;  // the module was loaded with pinned-clock
  replay_through("module", redis::ScriptEngine::kModule, std::move(base));
}
#endif

std::string trace_name(const testing::TestParamInfo<std::filesystem::path>& param) {
  std::string name = param.param.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Traces, RedisConformanceTest, testing::ValuesIn(trace_files()),
                         trace_name);
#ifdef SLUICE_MODULE_PATH
INSTANTIATE_TEST_SUITE_P(Traces, RedisModuleConformanceTest, testing::ValuesIn(trace_files()),
                         trace_name);
#endif

// The same traces through a Redis Cluster of three masters (redis+cluster://): routing by slot
// and per-slot batching change nothing in what is decided.
class RedisClusterConformanceTest : public testing::TestWithParam<std::filesystem::path> {
 protected:
  static void SetUpTestSuite() {
    StatusOr<std::unique_ptr<sluice::test::RedisCluster>> cluster =
        sluice::test::RedisCluster::start({.masters = 3, .replicas_per_master = 0});
    ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
    cluster_ = std::move(*cluster).release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static sluice::test::RedisCluster* cluster_;
};

sluice::test::RedisCluster* RedisClusterConformanceTest::cluster_ = nullptr;

TEST_P(RedisClusterConformanceTest, ReplaysTraceExactly) {
  ASSERT_NE(cluster_, nullptr);
  for (std::size_t i = 0; i < cluster_->nodes().size(); ++i) {
    ASSERT_TRUE(cluster_->cli(i, {"FLUSHALL"}).ok());
  }
  ManualClock clock(0);
  StatusOr<std::unique_ptr<store::RedisStore>> store =
      store::RedisStore::open(cluster_->url(), {}, {.pinned_clock_for_tests = &clock});
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  const std::vector<std::string> problems =
      replay(load_trace(GetParam()), **store, [&](Micros now) { clock.set(now); });
  for (const std::string& problem : problems) ADD_FAILURE() << problem;
}

INSTANTIATE_TEST_SUITE_P(Traces, RedisClusterConformanceTest, testing::ValuesIn(trace_files()),
                         trace_name);

}  // namespace
}  // namespace sluice::conformance
