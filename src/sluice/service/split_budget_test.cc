// Failure mode `split` through the Limiter, against a real redis-server that the test stops and
// restarts: three Limiter instances play three nodes that last saw 3 live nodes. During the
// outage even traffic admits at most the limit (within one node's rounding), where fail_open
// admits everything and `local` at fraction 1 admits the limit on every node; skewed traffic
// shows split's cost (a node alone gets its share only). When Redis returns, decisions are
// shared again. The local store runs on a ManualClock: no window moves unless the test says so.
#include "sluice/service/split_budget.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/limiter.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice::service {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;

constexpr std::string_view kPolicies = R"([
  {"name": "split", "apps": ["*"], "on_store_failure": "split", "limits": [
     {"algorithm": "fixed_window", "limit": 100, "window": "1h"}]},
  {"name": "split-shadow", "apps": ["*"], "mode": "shadow", "on_store_failure": "split",
   "limits": [{"algorithm": "fixed_window", "limit": 100, "window": "1h"}]},
  {"name": "local", "apps": ["*"], "on_store_failure": "local", "limits": [
     {"algorithm": "fixed_window", "limit": 100, "window": "1h"}]},
  {"name": "open", "apps": ["*"], "on_store_failure": "fail_open", "limits": [
     {"algorithm": "fixed_window", "limit": 100, "window": "1h"}]}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

TEST(SplitFractionTest, IsOneOverTheLiveCountOrTheFallbackWithoutOne) {
  EXPECT_EQ(split_fraction(nullptr, 0.5), 0.5);
  EXPECT_EQ(split_fraction([] { return std::size_t{0}; }, 0.5), 0.5);  // never reached Redis
  EXPECT_EQ(split_fraction([] { return std::size_t{1}; }, 0.5), 1.0);
  EXPECT_EQ(split_fraction([] { return std::size_t{4}; }, 0.5), 0.25);
}

class SplitBudgetTest : public testing::Test {
 protected:
  static constexpr int kNodes = 3;

  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
        {.port = server_->port(), .connect_timeout = 200 * kMicrosPerMilli});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    redis_ = std::make_unique<store::RedisStore>(
        std::shared_ptr<redis::Multiplexer>(std::move(*client)));
    for (int i = 0; i < kNodes; ++i) {
      // Each node has its own process memory: its own local store.
      locals_.push_back(std::make_unique<store::MemoryStore>(clock_));
      nodes_.push_back(
          std::make_unique<Limiter>(*redis_, locals_.back().get(),
                                    LimiterOptions{.local_fraction = 1.0,
                                                   .store_timeout = 30 * kMicrosPerSecond,
                                                   .policies = &lookup_,
                                                   // Off: a denial cached before the restart
                                                   // would outlive the data Redis lost
                                                   // (docs/defences.md), and this test is
                                                   // about split, not the cache.
                                                   .over_limit_cache_entries = 0,
                                                   .live_nodes = [this] { return live_nodes_; }}));
    }
  }

  // Sends requests[node] decisions to each node; the allowed ones in total.
  int drive(std::string_view policy, const std::vector<int>& requests, bool expect_degraded) {
    int allowed = 0;
    for (int node = 0; node < kNodes; ++node) {
      for (int i = 0; i < requests[node]; ++i) {
        StatusOr<Decision> decision =
            nodes_[node]
                ->block_on({.app = "web", .policy = std::string(policy), .subject = "client"})
                .decision;
        EXPECT_TRUE(decision.ok()) << decision.status().to_string();
        if (!decision.ok()) continue;
        EXPECT_EQ(decision->degraded, expect_degraded);
        allowed += decision->verdict.allowed ? 1 : 0;
      }
    }
    return allowed;
  }

  ManualClock clock_{kEpoch};
  std::size_t live_nodes_ = kNodes;
  StaticPolicyLookup lookup_{policies()};
  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<store::RedisStore> redis_;
  std::vector<std::unique_ptr<store::MemoryStore>> locals_;
  std::vector<std::unique_ptr<Limiter>> nodes_;
};

TEST_F(SplitBudgetTest, EvenTrafficKeepsTheGlobalBudgetWhereOtherModesDoNot) {
  ASSERT_TRUE(server_->stop().ok());
  struct Case {
    std::string_view policy;
    int allowed;
  };
  // 3 nodes × 60 requests against a limit of 100.
  for (const Case& c : {Case{"split", 99}, Case{"local", 180}, Case{"open", 180}}) {
    SCOPED_TRACE(c.policy);
    EXPECT_EQ(drive(c.policy, {60, 60, 60}, true), c.allowed);
  }
  // split: 3 × floor(100 / 3) = 99 <= 100, short by less than one unit per node.
}

TEST_F(SplitBudgetTest, TheUsageSeenBeforeTheOutageIsChargedToTheNodesShares) {
  // 60 of 100 used, the nodes taking turns: each last saw 58, 59 and 60 used.
  int allowed = 0;
  for (int i = 0; i < 60; ++i) {
    StatusOr<Decision> decision =
        nodes_[i % kNodes]
            ->block_on({.app = "web", .policy = "split", .subject = "client"})
            .decision;
    ASSERT_TRUE(decision.ok() && !decision->degraded);
    allowed += decision->verdict.allowed ? 1 : 0;
  }
  ASSERT_EQ(allowed, 60);
  ASSERT_TRUE(server_->stop().ok());
  // Each node charges ceil(used / 3) = 20 of its 33 before deciding: 3 × 13 more, 99 in all
  // (without the seed: 60 + 99 = 159).
  EXPECT_EQ(drive("split", {60, 60, 60}, true), 39);
}

TEST_F(SplitBudgetTest, SkewedTrafficGetsOneNodesShareOnly) {
  ASSERT_TRUE(server_->stop().ok());
  EXPECT_EQ(drive("split", {180, 0, 0}, true), 33);
  EXPECT_EQ(drive("local", {180, 0, 0}, true), 100);
}

TEST_F(SplitBudgetTest, FollowsTheLiveCountAndFallsBackToTheLocalFractionWithoutOne) {
  ASSERT_TRUE(server_->stop().ok());
  live_nodes_ = 4;
  EXPECT_EQ(drive("split", {30, 0, 0}, true), 25);
  live_nodes_ = 0;  // never read: as `local` at local_fraction (1 here)
  EXPECT_EQ(drive("split", {0, 120, 0}, true), 100);
}

TEST_F(SplitBudgetTest, ShadowModeAllowsWhatTheSplitBudgetRefusesAndReportsIt) {
  ASSERT_TRUE(server_->stop().ok());
  EXPECT_EQ(drive("split-shadow", {40, 0, 0}, true), 40);
  EXPECT_EQ(nodes_[0]->stats().shadow_denied, 7u);  // 40 - floor(100 / 3)
}

TEST_F(SplitBudgetTest, SharedStateAgainWhenRedisReturns) {
  EXPECT_EQ(drive("split", {40, 40, 40}, false), 100);  // shared: the whole limit, once
  ASSERT_TRUE(server_->stop().ok());
  EXPECT_EQ(drive("split", {10, 0, 0}, true), 10);
  ASSERT_TRUE(server_->restart().ok());
  // The client reconnects with a backoff, and each node's circuit breaker (opened by the
  // outage) lets a probe through only after its open period: calls until then are still
  // degraded. Wait until every node decides on Redis again (I/O events, not a time to pass),
  // bounded.
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    bool shared = false;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!shared && std::chrono::steady_clock::now() < give_up) {
      StatusOr<Decision> decision =
          nodes_[n]->block_on({.app = "web", .policy = "split", .subject = "other"}).decision;
      shared = decision.ok() && !decision->degraded;
      if (!shared) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling
    }
    ASSERT_TRUE(shared) << "node " << n;
  }
  // Shared again, not split: the whole limit once across the nodes (a restarted redis-server
  // without persistence starts empty, so "client" has its 100 again).
  EXPECT_EQ(drive("split", {40, 40, 40}, false), 100);
}

}  // namespace
}  // namespace sluice::service
