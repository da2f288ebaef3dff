// NodeHeartbeat against a real redis-server, on a pinned script clock (no test waits for a TTL):
// nodes count while they beat, stop counting one TTL after their last beat (to the µs), leave at
// once, and an outage keeps the last count read.
#include "sluice/store/redis/node_heartbeat.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "testing/redis_cluster.h"
#include "testing/redis_server.h"

namespace sluice::store {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kTtl = 3 * kMicrosPerSecond;

class NodeHeartbeatTest : public testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
        {.port = server_->port(), .connect_timeout = 200 * kMicrosPerMilli});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    client_ = std::shared_ptr<redis::Multiplexer>(std::move(*client));
  }

  std::unique_ptr<NodeHeartbeat> node(std::string id) {
    StatusOr<std::unique_ptr<NodeHeartbeat>> heartbeat = NodeHeartbeat::create(
        *client_, {.node_id = std::move(id), .ttl = kTtl, .pinned_clock_for_tests = &clock_});
    EXPECT_TRUE(heartbeat.ok()) << heartbeat.status().to_string();
    return heartbeat.ok() ? std::move(*heartbeat) : nullptr;
  }

  ManualClock clock_{kEpoch};
  std::unique_ptr<test::RedisServer> server_;
  std::shared_ptr<redis::Multiplexer> client_;
};

TEST_F(NodeHeartbeatTest, CountsNodesWhileTheyBeatAndDropsThemOneTtlAfterTheLastBeat) {
  std::unique_ptr<NodeHeartbeat> a = node("a");
  std::unique_ptr<NodeHeartbeat> b = node("b");
  std::unique_ptr<NodeHeartbeat> c = node("c");
  EXPECT_EQ(a->live_nodes(), 0u);  // never beat
  EXPECT_EQ(*a->beat(), 1u);
  EXPECT_EQ(*b->beat(), 2u);
  EXPECT_EQ(*c->beat(), 3u);
  EXPECT_EQ(*c->beat(), 3u);  // a node counts once however often it beats
  EXPECT_EQ(a->live_nodes(), 1u);
  EXPECT_EQ(c->live_nodes(), 3u);
  clock_.advance(kTtl - 1);  // a and b: their last µs
  EXPECT_EQ(*c->beat(), 3u);
  clock_.advance(1);  // a and b have expired; c beat 1 µs before the TTL
  EXPECT_EQ(*c->beat(), 1u);
  EXPECT_EQ(*a->beat(), 2u);  // a comes back
}

TEST_F(NodeHeartbeatTest, LeaveDropsTheNodeAtOnce) {
  std::unique_ptr<NodeHeartbeat> a = node("a");
  std::unique_ptr<NodeHeartbeat> b = node("b");
  ASSERT_EQ(*a->beat(), 1u);
  ASSERT_EQ(*b->beat(), 2u);
  EXPECT_EQ(*a->leave(), 1u);
  EXPECT_EQ(*b->beat(), 1u);
}

TEST_F(NodeHeartbeatTest, AnOutageKeepsTheLastCountRead) {
  std::unique_ptr<NodeHeartbeat> a = node("a");
  std::unique_ptr<NodeHeartbeat> b = node("b");
  ASSERT_EQ(*a->beat(), 1u);
  ASSERT_EQ(*b->beat(), 2u);
  ASSERT_EQ(*a->beat(), 2u);
  ASSERT_TRUE(server_->stop().ok());
  StatusOr<std::size_t> failed = a->beat();
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(a->live_nodes(), 2u);
}

TEST_F(NodeHeartbeatTest, TheLoopBeatsAtOnceAndLeavesWhenDestroyed) {
  std::unique_ptr<NodeHeartbeat> a = node("a");
  std::unique_ptr<NodeHeartbeat> b = node("b");
  ASSERT_EQ(*b->beat(), 1u);
  {
    HeartbeatLoop loop(*a);
    // The loop's first beat is immediate; wait for its answer (not for time to pass).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (a->live_nodes() == 0 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    EXPECT_EQ(a->live_nodes(), 2u);
  }
  EXPECT_EQ(*b->beat(), 1u);  // a left
}

TEST_F(NodeHeartbeatTest, RefusesAnEmptyIdAndATtlUnderAMillisecond) {
  EXPECT_EQ(NodeHeartbeat::create(*client_, {.node_id = ""}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(NodeHeartbeat::create(*client_, {.node_id = "a", .ttl = 999}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(NodeHeartbeatClusterTest, CountsNodesOnARedisCluster) {
  StatusOr<std::unique_ptr<test::RedisCluster>> cluster =
      test::RedisCluster::start({.masters = 3, .replicas_per_master = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::open((*cluster)->url());
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  StatusOr<std::unique_ptr<NodeHeartbeat>> a = NodeHeartbeat::create(**client, {.node_id = "a"});
  StatusOr<std::unique_ptr<NodeHeartbeat>> b = NodeHeartbeat::create(**client, {.node_id = "b"});
  ASSERT_TRUE(a.ok() && b.ok());
  StatusOr<std::size_t> first = (*a)->beat();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(*first, 1u);
  EXPECT_EQ(*(*b)->beat(), 2u);
  EXPECT_EQ(*(*a)->leave(), 1u);
}

}  // namespace
}  // namespace sluice::store
