#include "sluice/service/limiter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice::service {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;

policy::Policy make_policy(policy::FailureMode on_failure = policy::FailureMode::kFailOpen,
                           policy::Mode mode = policy::Mode::kEnforce) {
  return {.name = "orders.create",
          .apps = {"checkout"},
          .mode = mode,
          .on_store_failure = on_failure,
          .limits = {algorithm::FixedWindow{.limit = 4, .window = kMicrosPerHour}}};
}

// A blocking acquire on a policy the test holds (no lookup).
StatusOr<Decision> try_acquire(Limiter& limiter, const policy::Policy& policy, std::string_view app,
                               std::string_view subject, std::int64_t cost) {
  return limiter
      .block_on({.app = std::string(app),
                 .held = std::make_shared<const policy::Policy>(policy),
                 .subject = std::string(subject),
                 .cost = cost})
      .decision;
}

TEST(LimiterTest, RefusesAppsThePolicyDoesNotList) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  Limiter limiter(store, &store);
  const StatusOr<Decision> decision = try_acquire(limiter, make_policy(), "mobile", "alice", 1);
  EXPECT_EQ(decision.status().code(), StatusCode::kNotFound);
  EXPECT_NE(decision.status().message().find("no such policy for this app"), std::string::npos);
  policy::Policy any = make_policy();
  any.apps = {"*"};
  EXPECT_TRUE(try_acquire(limiter, any, "mobile", "alice", 1).ok());
}

TEST(LimiterTest, EnforcesAndCountsOutcomes) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  Limiter limiter(store, &store);
  const policy::Policy policy = make_policy();
  for (int i = 0; i < 6; ++i) {
    StatusOr<Decision> decision = try_acquire(limiter, policy, "checkout", "alice", 1);
    ASSERT_TRUE(decision.ok());
    EXPECT_EQ(decision->verdict.allowed, i < 4) << i;
    EXPECT_EQ(decision->policy, "orders.create");
    EXPECT_FALSE(decision->degraded);
  }
  EXPECT_EQ(limiter.stats().allowed, 4u);
  EXPECT_EQ(limiter.stats().denied, 2u);
}

// on_decision (the recorder's hook in `sluice serve`): every acquire and peek answered with a
// decision, with the request as resolved, and nothing else — not an error, not a quota operation.
TEST(LimiterTest, OnDecisionSeesEveryDecisionAndNothingElse) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  std::vector<std::string> seen;
  Limiter limiter(
      store, &store,
      {.on_decision = [&seen](const DecisionRequest& request, const Decision& decision) {
        seen.push_back(request.app + " " + decision.policy + " " + request.subject + " " +
                       std::to_string(request.cost) + " " +
                       (decision.verdict.allowed ? "allowed" : "denied"));
      }});
  const policy::Policy policy = make_policy();
  ASSERT_TRUE(try_acquire(limiter, policy, "checkout", "alice", 3).ok());
  ASSERT_TRUE(try_acquire(limiter, policy, "checkout", "alice", 2).ok());  // denied: 3 + 2 > 4
  ASSERT_TRUE(try_acquire(limiter, policy, "checkout", "bob", 0).ok());    // a peek
  EXPECT_FALSE(try_acquire(limiter, policy, "mobile", "alice", 1).ok());   // not listed: error
  EXPECT_FALSE(try_acquire(limiter, policy, "checkout", "alice", -1).ok());
  ASSERT_TRUE(limiter
                  .block_on({.app = "checkout",
                             .held = std::make_shared<const policy::Policy>(policy),
                             .operation = Operation::kCharge,
                             .subject = "carol"})
                  .decision.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"checkout orders.create alice 3 allowed",
                                            "checkout orders.create alice 2 denied",
                                            "checkout orders.create bob 0 allowed"}));
}

TEST(LimiterTest, ShadowModeAllowsButReportsWouldBeDenials) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  Limiter limiter(store, &store);
  const policy::Policy policy = make_policy(policy::FailureMode::kFailOpen, policy::Mode::kShadow);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(try_acquire(limiter, policy, "checkout", "a", 1).ok());
  StatusOr<Decision> fifth = try_acquire(limiter, policy, "checkout", "a", 1);
  ASSERT_TRUE(fifth.ok());
  EXPECT_TRUE(fifth->verdict.allowed);
  EXPECT_TRUE(fifth->shadow_denied);
  EXPECT_EQ(fifth->mode, policy::Mode::kShadow);
  EXPECT_TRUE(fifth->verdict.retry_after.has_value());
  EXPECT_EQ(limiter.stats().shadow_denied, 1u);
}

TEST(LimiterTest, DisabledPolicyAllowsWithoutTouchingTheStore) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  Limiter limiter(store, &store);
  policy::Policy policy = make_policy();
  policy.enabled = false;
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(try_acquire(limiter, policy, "checkout", "a", 1)->verdict.allowed);
  }
  EXPECT_EQ(store.stats().keys, 0u);
}

TEST(LimiterTest, RejectsAbsurdCosts) {
  ManualClock clock(kEpoch);
  store::MemoryStore store(clock);
  Limiter limiter(store, &store);
  EXPECT_EQ(try_acquire(limiter, make_policy(), "checkout", "a", -1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(try_acquire(limiter, make_policy(), "checkout", "a", 2'000'000'000).status().code(),
            StatusCode::kInvalidArgument);
}

// The failure modes against a real Redis that goes away.
class LimiterFailureModeTest : public testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Multiplexer>> client =
        redis::Multiplexer::create({.port = server_->port(),
                                    .connect_timeout = 200 * kMicrosPerMilli,
                                    .command_timeout = 200 * kMicrosPerMilli});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    redis_ = std::make_unique<store::RedisStore>(
        std::shared_ptr<redis::Multiplexer>(std::move(*client)));
    local_ = std::make_unique<store::MemoryStore>(clock_);
    limiter_ =
        std::make_unique<Limiter>(*redis_, local_.get(), LimiterOptions{.local_fraction = 0.5});
  }

  // Waits until a decision is made by Redis again (the client reconnects in the background).
  void wait_for_recovery(const policy::Policy& policy) {
    for (int attempt = 0; attempt < 500; ++attempt) {
      StatusOr<Decision> decision = try_acquire(*limiter_, policy, "checkout", "probe", 0);
      if (decision.ok() && !decision->degraded) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a server, not time
    }
    FAIL() << "Redis decisions did not resume";
  }

  ManualClock clock_{kEpoch};
  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<store::RedisStore> redis_;
  std::unique_ptr<store::MemoryStore> local_;
  std::unique_ptr<Limiter> limiter_;
};

TEST_F(LimiterFailureModeTest, EachFailureModeDecidesAsConfiguredWhileRedisIsDown) {
  const policy::Policy open = make_policy(policy::FailureMode::kFailOpen);
  policy::Policy closed = make_policy(policy::FailureMode::kFailClosed);
  closed.name = "orders.closed";
  policy::Policy local = make_policy(policy::FailureMode::kLocal);
  local.name = "orders.local";
  ASSERT_FALSE(try_acquire(*limiter_, open, "checkout", "a", 1)->degraded);

  ASSERT_TRUE(server_->kill_hard().ok());
  for (int i = 0; i < 3; ++i) {
    StatusOr<Decision> d = try_acquire(*limiter_, open, "checkout", "a", 1);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->degraded);
    EXPECT_TRUE(d->verdict.allowed);
  }
  StatusOr<Decision> shut = try_acquire(*limiter_, closed, "checkout", "a", 1);
  ASSERT_TRUE(shut.ok());
  EXPECT_TRUE(shut->degraded);
  EXPECT_FALSE(shut->verdict.allowed);
  EXPECT_EQ(shut->verdict.retry_after, kMicrosPerSecond);
  // local: half of the 4-per-hour window on this node.
  int allowed = 0;
  for (int i = 0; i < 5; ++i) {
    StatusOr<Decision> d = try_acquire(*limiter_, local, "checkout", "a", 1);
    ASSERT_TRUE(d.ok());
    EXPECT_TRUE(d->degraded);
    allowed += d->verdict.allowed ? 1 : 0;
  }
  EXPECT_EQ(allowed, 2);
  EXPECT_EQ(limiter_->stats().degraded, 9u);
  // The circuit breaker (docs/defences.md) opened after its default 5 consecutive outages: the
  // other 4 decisions went to the failure mode without a store call.
  EXPECT_EQ(limiter_->stats().store_errors, 5u);
  EXPECT_EQ(limiter_->metrics().defences().breaker_rejections(), 4u);

  ASSERT_TRUE(server_->restart().ok());
  wait_for_recovery(open);
  StatusOr<Decision> back = try_acquire(*limiter_, open, "checkout", "b", 1);
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->degraded);
  EXPECT_EQ(back->verdict.remaining, 3);
}

}  // namespace
}  // namespace sluice::service
