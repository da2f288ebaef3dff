#include "sluice/service/backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "testing/redis_server.h"

namespace sluice::service {
namespace {

policy::Policy one_per_minute() {
  return {.name = "api",
          .apps = {"*"},
          .limits = {algorithm::FixedWindow{.limit = 1, .window = 60 * kMicrosPerSecond}}};
}

// One acquire of cost 1 on subject "k", for a policy the test holds.
StatusOr<Decision> decide_once(Limiter& limiter, const policy::Policy& policy) {
  return limiter
      .block_on({.app = "app",
                 .held = std::make_shared<const policy::Policy>(policy),
                 .subject = "k",
                 .cost = 1})
      .decision;
}

TEST(OpenBackend, MemoryUrlDecidesInProcess) {
  for (const std::string url : {"", "memory:"}) {
    SCOPED_TRACE(url);
    StatusOr<std::unique_ptr<Backend>> backend = open_backend(url, {});
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    EXPECT_EQ((*backend)->redis, nullptr);
    EXPECT_EQ(&(*backend)->store(), (*backend)->memory.get());
    EXPECT_EQ((*backend)->redis_address(), "");
    const policy::Policy policy = one_per_minute();
    StatusOr<Decision> first = decide_once(*(*backend)->limiter, policy);
    StatusOr<Decision> second = decide_once(*(*backend)->limiter, policy);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_TRUE(first->verdict.allowed);
    EXPECT_FALSE(second->verdict.allowed);
  }
}

TEST(OpenBackend, BadUrlIsNamedAsTheCallerNamesIt) {
  StatusOr<std::unique_ptr<Backend>> backend =
      open_backend("redis://host:notaport", {.url_name = "--redis"});
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(backend.status().message().starts_with("--redis: ")) << backend.status().message();
}

TEST(OpenBackend, RedisThatDoesNotAnswerIsAnOutageNotAnError) {
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok());
  StatusOr<std::unique_ptr<Backend>> backend =
      open_backend("redis://127.0.0.1:" + std::to_string(*port), {.check_redis = true});
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  EXPECT_NE((*backend)->redis, nullptr);
  EXPECT_FALSE((*backend)->unanswered_at_start.ok());
  EXPECT_EQ((*backend)->redis_address(), "127.0.0.1:" + std::to_string(*port) + "/0");
}

TEST(OpenBackend, RedisWithHeartbeatCountsThisNode) {
  StatusOr<std::unique_ptr<test::RedisServer>> redis = test::RedisServer::start();
  ASSERT_TRUE(redis.ok()) << redis.status().to_string();
  StatusOr<std::unique_ptr<Backend>> backend =
      open_backend("redis://127.0.0.1:" + std::to_string((*redis)->port()),
                   {.check_redis = true, .heartbeat = store::NodeHeartbeatOptions{.node_id = "a"}});
  ASSERT_TRUE(backend.ok()) << backend.status().to_string();
  EXPECT_TRUE((*backend)->unanswered_at_start.ok());
  EXPECT_EQ(&(*backend)->store(), (*backend)->redis.get());
  const policy::Policy policy = one_per_minute();
  StatusOr<Decision> first = decide_once(*(*backend)->limiter, policy);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->verdict.allowed);
  EXPECT_FALSE(first->degraded);
  // The loop's first beat counts this node.
  for (int i = 0; i < 500 && (*backend)->live_nodes() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ((*backend)->live_nodes(), 1u);
}

}  // namespace
}  // namespace sluice::service
