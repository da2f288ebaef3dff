// Token leasing through the Limiter against a real redis-server: several Limiter instances play
// the nodes of a deployment, each with its own leases, on one Redis. The scripts' clock and the
// leases' timers share one ManualClock (pinned_clock_for_tests), so windows and lease expiry move
// only when the test says so; the races between threads and nodes are real.
//
// Properties: a bucket never admits more than it holds however nodes race (leases only move
// admissions in time); a window admits at most nodes × lease_tokens beyond its limit (units
// taken in one window, spent in the next) and that bound is reached but never exceeded; unused
// units go back at expiry; shadow mode and every failure mode apply to leased decisions.
#include <gtest/gtest.h>

#include <atomic>
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

constexpr Micros kEpoch = 1'700'000'000'000'000;  // window-aligned for 1 s windows

constexpr std::string_view kPolicies = R"([
  {"name": "bucket", "apps": ["*"], "lease_tokens": 10, "lease_period": "60s", "limits": [
     {"algorithm": "token_bucket", "capacity": 200, "refill": 1, "period": "1h"}]},
  {"name": "gcra", "apps": ["*"], "lease_tokens": 10, "lease_period": "60s", "limits": [
     {"algorithm": "gcra", "rate": 1, "period": "1h", "burst": 199}]},
  {"name": "fixed", "apps": ["*"], "lease_tokens": 10, "lease_period": "60s", "limits": [
     {"algorithm": "fixed_window", "limit": 100, "window": "1s"}]},
  {"name": "sliding", "apps": ["*"], "lease_tokens": 10, "lease_period": "60s", "limits": [
     {"algorithm": "sliding_window", "limit": 100, "window": "1s"}]},
  {"name": "expiring", "apps": ["*"], "lease_tokens": 10, "lease_period": "100ms", "limits": [
     {"algorithm": "token_bucket", "capacity": 200, "refill": 1, "period": "1h"}]},
  {"name": "shadow", "apps": ["*"], "mode": "shadow", "lease_tokens": 3, "limits": [
     {"algorithm": "fixed_window", "limit": 5, "window": "1h"}]},
  {"name": "open", "apps": ["*"], "on_store_failure": "fail_open", "lease_tokens": 4,
   "lease_period": "60s", "limits": [{"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "closed", "apps": ["*"], "on_store_failure": "fail_closed", "lease_tokens": 4,
   "lease_period": "60s", "limits": [{"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "local", "apps": ["*"], "on_store_failure": "local", "lease_tokens": 4,
   "lease_period": "60s", "limits": [{"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "split", "apps": ["*"], "on_store_failure": "split", "lease_tokens": 4,
   "lease_period": "60s", "limits": [{"algorithm": "fixed_window", "limit": 10, "window": "1h"}]}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

class TokenBatchesTest : public testing::Test {
 protected:
  static constexpr int kNodes = 4;

  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Multiplexer>> client = redis::Multiplexer::create(
        {.port = server_->port(), .connect_timeout = 200 * kMicrosPerMilli});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    redis_ = std::make_unique<store::RedisStore>(
        std::shared_ptr<redis::Multiplexer>(std::move(*client)),
        store::RedisStoreOptions{.pinned_clock_for_tests = &clock_});
    for (int i = 0; i < kNodes; ++i) {
      nodes_.push_back(
          std::make_unique<Limiter>(*redis_, &local_,
                                    LimiterOptions{.store_timeout = 30 * kMicrosPerSecond,
                                                   .policies = &lookup_,
                                                   .timers = &timers_,
                                                   .live_nodes = [] { return std::size_t{2}; }}));
    }
  }
  void TearDown() override { nodes_.clear(); }

  StatusOr<Decision> decide(int node, std::string_view policy, std::string_view subject) {
    return nodes_[node]
        ->block_on({.app = "web", .policy = std::string(policy), .subject = std::string(subject)})
        .decision;
  }

  // Every node runs `threads` threads making `attempts` decisions each; the allowed ones.
  int hammer(std::string_view policy, std::string_view subject, int threads, int attempts) {
    std::atomic<int> allowed{0};
    std::vector<std::thread> running;
    for (int node = 0; node < kNodes; ++node) {
      for (int t = 0; t < threads; ++t) {
        running.emplace_back([&, node] {
          for (int i = 0; i < attempts; ++i) {
            StatusOr<Decision> decision = decide(node, policy, subject);
            EXPECT_TRUE(decision.ok()) << decision.status().to_string();
            if (decision.ok() && decision->verdict.allowed) ++allowed;
          }
        });
      }
    }
    for (std::thread& thread : running) thread.join();
    return allowed.load();
  }

  std::int64_t stored_balance(std::string_view name, std::string_view subject) {
    const std::shared_ptr<const policy::Policy> policy = lookup_.find(name);
    StatusOr<Decision> peek = store::apply_quota_now(
        *redis_, {.policy = policy->name, .limits = policy->limits, .subject = subject},
        {.cost = 0});
    EXPECT_TRUE(peek.ok()) << peek.status().to_string();
    return peek.ok() ? peek->verdict.balance.value_or(-1) : -1;
  }

  ManualClock clock_{kEpoch};
  TimerQueue timers_{clock_, kMicrosPerMilli, TimerQueue::Threading::kManual};
  StaticPolicyLookup lookup_{policies()};
  store::MemoryStore local_{clock_};
  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<store::RedisStore> redis_;
  std::vector<std::unique_ptr<Limiter>> nodes_;
};

TEST_F(TokenBatchesTest, BucketsNeverAdmitMoreThanTheyHoldHoweverNodesRace) {
  for (std::string_view policy : {"bucket", "gcra"}) {
    SCOPED_TRACE(policy);
    // 4 nodes × 4 threads × 30 = 480 attempts on a budget of 200 that does not refill.
    const int allowed = hammer(policy, "hot", 4, 30);
    EXPECT_LE(allowed, 200);
    // What is not admitted is still held by a lease: at most nodes × lease_tokens.
    EXPECT_GE(allowed, 200 - kNodes * 10);
    EXPECT_EQ(stored_balance(policy, "hot"), 0);
  }
}

TEST_F(TokenBatchesTest, WindowsAdmitAtMostNodesTimesLeaseTokensBeyondTheirLimit) {
  for (std::string_view policy : {"fixed", "sliding"}) {
    for (int round = 0; round < 3; ++round) {
      SCOPED_TRACE(std::string(policy) + " round " + std::to_string(round));
      const std::string subject = "hot-" + std::to_string(round);
      clock_.set(kEpoch + 10 * round * kMicrosPerSecond);
      // The worst case: each node takes a lease late in one window and spends 1 unit of it...
      for (int node = 0; node < kNodes; ++node) {
        StatusOr<Decision> first = decide(node, policy, subject);
        ASSERT_TRUE(first.ok() && first->verdict.allowed);
      }
      // ...then spends the other 9 in a later window, besides that window's own 100.
      clock_.advance(2 * kMicrosPerSecond);
      const int allowed = hammer(policy, subject, 4, 60);
      EXPECT_LE(allowed, 100 + kNodes * 10);  // the documented bound, never exceeded
      EXPECT_GE(allowed, 100);                // leasing costs no budget here
      RecordProperty(std::string(policy) + "_round_" + std::to_string(round), allowed);
    }
  }
}

TEST_F(TokenBatchesTest, UnusedUnitsGoBackAtExpiryAndTheStatsCountThem) {
  for (int i = 0; i < 3; ++i) {
    StatusOr<Decision> decision = decide(0, "expiring", "hot");
    ASSERT_TRUE(decision.ok() && decision->verdict.allowed);
    EXPECT_FALSE(decision->degraded);
  }
  TokenBatchStats stats = nodes_[0]->token_batch_stats();
  EXPECT_EQ(stats.takes, 1u);
  EXPECT_EQ(stats.taken, 10u);
  EXPECT_EQ(stats.local, 2u);  // the first decision waited for the take
  EXPECT_EQ(stored_balance("expiring", "hot"), 190);
  clock_.advance(100 * kMicrosPerMilli - 1);
  timers_.fire_due();
  EXPECT_EQ(nodes_[0]->token_batch_stats().given_back, 0u);
  clock_.advance(1);
  timers_.fire_due();
  // The give-back is answered on the client's I/O thread: wait for that answer (not for time).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (nodes_[0]->token_batch_stats().given_back == 0 &&
         nodes_[0]->token_batch_stats().give_back_errors == 0 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  EXPECT_EQ(nodes_[0]->token_batch_stats().give_back_errors, 0u);
  EXPECT_EQ(nodes_[0]->token_batch_stats().given_back, 7u);
  EXPECT_EQ(stored_balance("expiring", "hot"), 197);
  // An expired lease is not spent: the next decision takes a new one.
  ASSERT_TRUE(decide(0, "expiring", "hot")->verdict.allowed);
  EXPECT_EQ(nodes_[0]->token_batch_stats().takes, 2u);
  EXPECT_EQ(stored_balance("expiring", "hot"), 187);
  // Metrics count leased decisions as any others.
  EXPECT_EQ(nodes_[0]->stats().allowed, 4u);
}

TEST_F(TokenBatchesTest, APeekAsksTheStoreAndTakesNoLease) {
  StatusOr<Decision> peek =
      nodes_[0]
          ->block_on({.app = "web", .policy = "bucket", .subject = "peeked", .cost = 0})
          .decision;
  ASSERT_TRUE(peek.ok()) << peek.status().to_string();
  EXPECT_TRUE(peek->verdict.allowed);
  EXPECT_EQ(peek->verdict.remaining, 200);
  EXPECT_EQ(nodes_[0]->token_batch_stats().takes, 0u);
  EXPECT_EQ(stored_balance("bucket", "peeked"), 200);
}

TEST_F(TokenBatchesTest, ShadowModeAllowsWhatTheLeasesRefuseAndReportsIt) {
  int shadow_denied = 0;
  for (int i = 0; i < 8; ++i) {
    StatusOr<Decision> decision = decide(0, "shadow", "hot");
    ASSERT_TRUE(decision.ok());
    EXPECT_TRUE(decision->verdict.allowed);
    shadow_denied += decision->shadow_denied ? 1 : 0;
  }
  EXPECT_EQ(shadow_denied, 3);
  // A leased denial reads as an acquire's: no quota balance in it.
  StatusOr<Decision> denied = decide(1, "shadow", "hot");
  ASSERT_TRUE(denied.ok());
  EXPECT_TRUE(denied->shadow_denied);
  EXPECT_FALSE(denied->verdict.balance.has_value());
  EXPECT_EQ(nodes_[0]->stats().shadow_denied, 3u);
  EXPECT_EQ(stored_balance("shadow", "hot"), 0);
}

TEST_F(TokenBatchesTest, AHeldLeaseOutlastsAnOutageThenEachFailureModeDecides) {
  // Each policy's lease is taken (4 units, 1 spent) while Redis answers.
  for (std::string_view policy : {"open", "closed", "local", "split"}) {
    ASSERT_TRUE(decide(0, policy, "hot")->verdict.allowed);
  }
  ASSERT_TRUE(server_->stop().ok());
  struct Case {
    std::string_view policy;
    int allowed_after_lease;  // of 8 degraded decisions
  };
  // local grants the whole limit (local_fraction 1); split 1/2 of it (live_nodes answers 2), less
  // its half of the 4 units used before the outage (the seed, last_seen_usage.h): 5 - 2.
  for (const Case& c : {Case{"open", 8}, Case{"closed", 0}, Case{"local", 8}, Case{"split", 3}}) {
    SCOPED_TRACE(c.policy);
    for (int i = 0; i < 3; ++i) {  // the lease's other 3 units: no store call, not degraded
      StatusOr<Decision> decision = decide(0, c.policy, "hot");
      ASSERT_TRUE(decision.ok());
      EXPECT_TRUE(decision->verdict.allowed);
      EXPECT_FALSE(decision->degraded);
    }
    int allowed = 0;
    for (int i = 0; i < 8; ++i) {
      StatusOr<Decision> decision = decide(0, c.policy, "hot");
      ASSERT_TRUE(decision.ok()) << decision.status().to_string();
      EXPECT_TRUE(decision->degraded);
      allowed += decision->verdict.allowed ? 1 : 0;
    }
    EXPECT_EQ(allowed, c.allowed_after_lease);
  }
  EXPECT_EQ(nodes_[0]->stats().degraded, 32u);
}

}  // namespace
}  // namespace sluice::service
