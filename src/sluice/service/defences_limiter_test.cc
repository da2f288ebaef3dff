// The defences in the decision pipeline against a real Redis (docs/defences.md): the over-limit
// cache, the circuit breaker and the staged rollout, with shadow mode and every failure mode.
// Time is injected: one ManualClock drives the limiter's timers and the cache; Redis is paused
// (SIGSTOP) to make calls hang until their deadline, and the test fires deadlines itself. The
// store is counted by a pass-through wrapper, so "no store call" is a count, not a timing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <mutex>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/limiter.h"
#include "sluice/service/rollout.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/counting_store.h"
#include "testing/redis_server.h"

namespace sluice::service {
namespace {

// A blocking acquire of one unit by app "web" on a policy the test holds (no lookup).
StatusOr<Decision> acquire_held(Limiter& limiter, std::shared_ptr<const policy::Policy> policy,
                                std::string subject) {
  return limiter.block_on({.app = "web", .held = std::move(policy), .subject = std::move(subject)})
      .decision;
}

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kStoreTimeout = 50 * kMicrosPerMilli;

constexpr std::string_view kPolicies = R"([
  {"name": "window", "apps": ["*"], "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "window-shadow", "apps": ["*"], "mode": "shadow", "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "closed", "apps": ["*"], "on_store_failure": "fail_closed", "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "closed-shadow", "apps": ["*"], "mode": "shadow", "on_store_failure": "fail_closed",
   "limits": [{"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "local", "apps": ["*"], "on_store_failure": "local", "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "uncached", "apps": ["*"], "over_limit_cache": false, "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "metered", "apps": ["*"], "max_debt": 5, "over_limit_cache": true, "limits": [
     {"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "leased", "apps": ["*"], "limits": [
     {"algorithm": "concurrency", "limit": 1, "lease_ttl": "1h"}]},
  {"name": "rollout", "apps": ["*"], "rollout": "30%", "on_store_failure": "fail_closed",
   "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1h"}]},
  {"name": "rollout-local", "apps": ["*"], "rollout": "30%", "on_store_failure": "local",
   "limits": [{"algorithm": "fixed_window", "limit": 3, "window": "1h"}]},
  {"name": "token_bucket", "apps": ["*"], "limits": [
     {"algorithm": "token_bucket", "capacity": 2, "refill": 1, "period": "10s"}]},
  {"name": "gcra", "apps": ["*"], "limits": [
     {"algorithm": "gcra", "rate": 1, "period": "10s", "burst": 1}]},
  {"name": "leaky_bucket", "apps": ["*"], "limits": [
     {"algorithm": "leaky_bucket", "rate": 1, "period": "10s", "max_delay": "10s"}]},
  {"name": "sliding_window", "apps": ["*"], "limits": [
     {"algorithm": "sliding_window", "limit": 2, "window": "1h"}]},
  {"name": "sliding_log", "apps": ["*"], "limits": [
     {"algorithm": "sliding_log", "limit": 2, "window": "1h"}]},
  {"name": "two_limits", "apps": ["*"], "limits": [
     {"algorithm": "token_bucket", "capacity": 5, "refill": 5, "period": "1s"},
     {"algorithm": "fixed_window", "limit": 2, "window": "1h"}]}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

using test::CountingStore;

// One acquire's answer: whether it came before acquire returned (always so for an answer made
// without the store; an answer from a live Redis may race the return, so only call counts tell
// "Redis was asked"), and the decision.
struct Answer {
  bool at_once = false;
  StatusOr<Decision> decision = unavailable("no answer");
};

class DefencesLimiterTest : public testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    // The client's own timeout is long: the limiter's deadlines, on the manual clock, decide.
    StatusOr<std::unique_ptr<redis::Multiplexer>> client =
        redis::Multiplexer::create({.port = server_->port(),
                                    .connect_timeout = 200 * kMicrosPerMilli,
                                    .command_timeout = 30 * kMicrosPerSecond});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    redis_ = std::make_unique<store::RedisStore>(
        std::shared_ptr<redis::Multiplexer>(std::move(*client)));
    counting_ = std::make_unique<CountingStore>(*redis_);
    make_limiter({});
  }

  void TearDown() override {
    if (paused_) resume();
    // The store goes first, while the limiter its pending callbacks call is still alive.
    redis_.reset();
  }

  void make_limiter(CircuitBreakerOptions breaker) {
    limiter_.reset();
    limiter_ = std::make_unique<Limiter>(*counting_, &local_,
                                         LimiterOptions{.local_fraction = 1.0 / 3,
                                                        .store_timeout = kStoreTimeout,
                                                        .policies = &lookup_,
                                                        .timers = &timers_,
                                                        .circuit_breaker = breaker});
  }

  // Redis stops answering (its process is stopped): calls hang until their deadline.
  void pause() {
    ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
    paused_ = true;
  }
  void resume() {
    ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
    paused_ = false;
  }

  // Starts a decision; the answer lands in the returned future.
  std::shared_future<Answer> start(std::string policy, std::string subject, std::int64_t cost = 1) {
    auto promise = std::make_shared<std::promise<Answer>>();
    std::shared_future<Answer> future = promise->get_future().share();
    auto returned = std::make_shared<std::atomic<bool>>(false);
    limiter_->decide(
        {.app = "web", .policy = std::move(policy), .subject = std::move(subject), .cost = cost},
        [promise, returned](Decided decided) {
          promise->set_value(
              {.at_once = !returned->load(), .decision = std::move(decided.decision)});
        });
    returned->store(true);
    return future;
  }

  // Decides and waits for Redis's answer (a bounded wait on the server, not on time).
  Answer decide(std::string policy, std::string subject, std::int64_t cost = 1) {
    std::shared_future<Answer> future = start(std::move(policy), std::move(subject), cost);
    if (future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within 10 s";
      return {};
    }
    return future.get();
  }

  // Decides while Redis is paused, for an answer expected before acquire returns: fails at once
  // (no wait for a deadline) when the answer is not there.
  Answer decide_now(std::string policy, std::string subject) {
    std::shared_future<Answer> future = start(std::move(policy), std::move(subject));
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ADD_FAILURE() << "not answered before acquire returned";
      return {};
    }
    return future.get();
  }

  // Fires the deadlines of calls a paused Redis holds.
  void pass_store_timeout() {
    clock_.advance(kStoreTimeout);
    timers_.fire_due();
  }

  std::int64_t cache_hits() const {
    return static_cast<std::int64_t>(limiter_->metrics().defences().cache_hits());
  }

  ManualClock clock_{kEpoch};
  TimerQueue timers_{clock_, kMicrosPerMilli, TimerQueue::Threading::kManual};
  StaticPolicyLookup lookup_{policies()};
  store::MemoryStore local_{clock_};
  std::unique_ptr<test::RedisServer> server_;
  std::unique_ptr<store::RedisStore> redis_;
  std::unique_ptr<CountingStore> counting_;
  std::unique_ptr<Limiter> limiter_;
  bool paused_ = false;
};

TEST_F(DefencesLimiterTest, ADeniedSubjectIsDeniedLocallyUntilTheStoresRetryAfter) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(decide("window", "abuser").decision->verdict.allowed);
  const Answer first = decide("window", "abuser");
  ASSERT_TRUE(first.decision.ok());
  ASSERT_FALSE(first.decision->verdict.allowed);
  ASSERT_TRUE(first.decision->verdict.retry_after.has_value());
  const Micros retry_after = *first.decision->verdict.retry_after;
  EXPECT_EQ(counting_->calls, 4);

  for (int i = 0; i < 100; ++i) {
    const Answer cached = decide("window", "abuser");
    ASSERT_TRUE(cached.decision.ok());
    EXPECT_TRUE(cached.at_once) << "no round trip";
    EXPECT_FALSE(cached.decision->verdict.allowed);
    EXPECT_FALSE(cached.decision->degraded);
    EXPECT_EQ(cached.decision->policy, "window");
    EXPECT_EQ(cached.decision->verdict.limit, 3);
    EXPECT_EQ(cached.decision->verdict.retry_after, retry_after);
  }
  EXPECT_EQ(counting_->calls, 4) << "100 denials, no Redis call";
  EXPECT_EQ(cache_hits(), 100);
  EXPECT_EQ(limiter_->metrics().defences().cache_entries(), 1);
  EXPECT_EQ(limiter_->stats().denied, 101u);
  // Another subject, and the same subject under another policy, still ask Redis.
  EXPECT_TRUE(decide("window", "someone-else").decision->verdict.allowed);
  EXPECT_TRUE(decide("closed", "abuser").decision->verdict.allowed);
  EXPECT_EQ(counting_->calls, 6);

  // The retry point counts down with the clock, and the entry ends exactly there.
  clock_.advance(retry_after - 1);
  const Answer late = decide("window", "abuser");
  EXPECT_TRUE(late.at_once);
  EXPECT_EQ(late.decision->verdict.retry_after, 1);
  clock_.advance(1);
  decide("window", "abuser");
  EXPECT_EQ(counting_->calls, 7) << "at the retry point Redis is asked again";

  std::string text;
  limiter_->metrics().write(text);
  EXPECT_NE(text.find("sluice_over_limit_cache_hits_total{policy=\"window\"} 101\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_over_limit_cache_entries 1\n"), std::string::npos);
}

// Exactness per algorithm: every cached denial is one Redis would give at that moment. The
// limiter runs on the real steady clock here (Redis decides on its own clock), and Redis's
// dry run, right after each cached answer, must deny the same cost too.
TEST_F(DefencesLimiterTest, EveryCachedDenialIsOneRedisWouldGiveForEachAlgorithm) {
  Limiter limiter(*counting_, &local_, {.policies = &lookup_});
  for (std::string_view name : {"token_bucket", "gcra", "leaky_bucket", "window", "sliding_window",
                                "sliding_log", "two_limits"}) {
    SCOPED_TRACE(name);
    const std::shared_ptr<const policy::Policy> policy = lookup_.find(name);
    ASSERT_NE(policy, nullptr);
    int store_denials = 0;
    for (int i = 0; i < 10 && store_denials == 0; ++i) {
      StatusOr<Decision> d = acquire_held(limiter, policy, "exact");
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      store_denials += d->verdict.allowed ? 0 : 1;
    }
    ASSERT_EQ(store_denials, 1) << "the limit was never reached";
    const std::int64_t calls = counting_->calls;
    const std::uint64_t hits = limiter.metrics().defences().cache_hits();
    for (int i = 0; i < 20; ++i) {
      StatusOr<Decision> cached = acquire_held(limiter, policy, "exact");
      ASSERT_TRUE(cached.ok());
      ASSERT_FALSE(cached->verdict.allowed);
      StatusOr<store::DryRun> truth = redis_->dry_run(
          {.policy = policy->name, .limits = policy->limits, .subject = "exact"}, 1);
      ASSERT_TRUE(truth.ok()) << truth.status().to_string();
      EXPECT_FALSE(truth->policy.verdict.allowed) << "the cache denied what Redis would allow";
      ASSERT_TRUE(truth->policy.verdict.retry_after.has_value());
      EXPECT_LE(*cached->verdict.retry_after, *truth->policy.verdict.retry_after + kMicrosPerSecond)
          << "the cached retry point is Redis's, up to the time between the two answers (which "
             "a loaded machine may stretch: only a gross over-caching fails here)";
    }
    EXPECT_EQ(counting_->calls, calls) << "the 20 denials came from the cache";
    EXPECT_EQ(limiter.metrics().defences().cache_hits(), hits + 20);
  }
}

TEST_F(DefencesLimiterTest, ACachedDenialInShadowModeIsReportedAndAllowed) {
  for (int i = 0; i < 3; ++i) decide("window-shadow", "abuser");
  const Answer stored = decide("window-shadow", "abuser");
  ASSERT_TRUE(stored.decision.ok());
  EXPECT_TRUE(stored.decision->verdict.allowed);
  EXPECT_TRUE(stored.decision->shadow_denied);
  const std::int64_t calls = counting_->calls;
  for (int i = 0; i < 10; ++i) {
    const Answer cached = decide("window-shadow", "abuser");
    ASSERT_TRUE(cached.decision.ok());
    EXPECT_TRUE(cached.at_once);
    EXPECT_TRUE(cached.decision->verdict.allowed) << "shadow mode never denies";
    EXPECT_TRUE(cached.decision->shadow_denied) << "but reports the would-be denial";
    EXPECT_EQ(cached.decision->mode, policy::Mode::kShadow);
  }
  EXPECT_EQ(counting_->calls, calls);
  EXPECT_EQ(limiter_->stats().shadow_denied, 11u);
  EXPECT_EQ(limiter_->stats().denied, 0u);
}

TEST_F(DefencesLimiterTest, CachedDenialsStayExactThroughAnOutageInEveryFailureMode) {
  for (std::string policy : {"window", "closed", "local", "closed-shadow"}) {
    for (int i = 0; i < 4; ++i) decide(policy, "abuser");
  }
  pause();
  for (std::string policy : {"window", "closed", "local"}) {
    SCOPED_TRACE(policy);
    const Answer cached = decide_now(policy, "abuser");
    EXPECT_TRUE(cached.at_once);
    EXPECT_FALSE(cached.decision->verdict.allowed) << "Redis denied it until T: still denied";
    EXPECT_FALSE(cached.decision->degraded);
  }
  const Answer shadow = decide_now("closed-shadow", "abuser");
  EXPECT_TRUE(shadow.at_once);
  EXPECT_TRUE(shadow.decision->verdict.allowed);
  EXPECT_TRUE(shadow.decision->shadow_denied);

  // Subjects the cache knows nothing of wait for the deadline and the failure mode decides.
  struct Case {
    std::string policy;
    bool allowed;
  };
  for (const Case& c : {Case{"window", true}, Case{"closed", false}, Case{"local", true}}) {
    SCOPED_TRACE(c.policy);
    std::shared_future<Answer> pending = start(c.policy, "fresh");
    EXPECT_NE(pending.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    pass_store_timeout();
    ASSERT_EQ(pending.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_TRUE(pending.get().decision->degraded);
    EXPECT_EQ(pending.get().decision->verdict.allowed, c.allowed);
  }
  EXPECT_EQ(limiter_->stats().store_errors, 3u);
}

TEST_F(DefencesLimiterTest, ConcurrencyLimitsAndPoliciesThatOptOutAreNeverCached) {
  const Answer held = decide("leased", "worker");
  ASSERT_TRUE(held.decision->verdict.allowed);
  ASSERT_TRUE(held.decision->lease.has_value());
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(decide("leased", "worker").decision->verdict.allowed);
  EXPECT_EQ(counting_->calls, 4) << "each denial asked Redis";
  ASSERT_TRUE(limiter_
                  ->block_on({.app = "web",
                              .held = lookup_.find("leased"),
                              .operation = Operation::kRelease,
                              .subject = "worker",
                              .lease = *held.decision->lease})
                  .decision.value()
                  .verdict.allowed);
  EXPECT_TRUE(decide("leased", "worker").decision->verdict.allowed)
      << "a release frees the unit at once: a cached denial would have been wrong";

  for (int i = 0; i < 6; ++i) decide("uncached", "abuser");
  EXPECT_EQ(counting_->calls, 11);
  EXPECT_EQ(cache_hits(), 0);
  EXPECT_EQ(limiter_->metrics().defences().cache_entries(), 0);
}

TEST_F(DefencesLimiterTest, ARefundThroughTheLimiterDropsTheCachedDenial) {
  for (int i = 0; i < 3; ++i) decide("metered", "tenant");
  ASSERT_FALSE(decide("metered", "tenant").decision->verdict.allowed);
  EXPECT_TRUE(decide("metered", "tenant").at_once) << "cached";
  const std::int64_t calls = counting_->calls;
  StatusOr<Decision> refund = limiter_
                                  ->block_on({.app = "web",
                                              .policy = "metered",
                                              .operation = Operation::kRefund,
                                              .subject = "tenant",
                                              .cost = 2})
                                  .decision;
  ASSERT_TRUE(refund.ok()) << refund.status().to_string();
  const Answer after = decide("metered", "tenant");
  EXPECT_TRUE(after.decision->verdict.allowed);
  EXPECT_EQ(counting_->calls, calls + 1) << "the refund gave units back: Redis is asked";
}

TEST_F(DefencesLimiterTest, AnOpenBreakerCostsNoTimeoutAndNoStoreCallPerRequest) {
  make_limiter({.failure_threshold = 3, .open_for = kMicrosPerSecond});
  pause();
  std::vector<std::shared_future<Answer>> hanging;
  for (int i = 0; i < 3; ++i) hanging.push_back(start("window", "s" + std::to_string(i)));
  EXPECT_EQ(limiter_->circuit_breaker_state(), BreakerState::kClosed);
  pass_store_timeout();
  for (auto& answer : hanging) {
    ASSERT_EQ(answer.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_TRUE(answer.get().decision->degraded);
  }
  ASSERT_EQ(limiter_->circuit_breaker_state(), BreakerState::kOpen);
  EXPECT_EQ(counting_->calls, 3);

  struct Case {
    std::string policy;
    bool allowed;
    bool shadow_denied;
  };
  int decided = 0;
  for (int round = 0; round < 20; ++round) {
    for (const Case& c : {Case{"window", true, false}, Case{"closed", false, false},
                          Case{"window-shadow", true, false}, Case{"closed-shadow", true, true},
                          Case{"local", round == 0, false}}) {
      SCOPED_TRACE(c.policy);
      const Answer answer = decide_now(c.policy, "during-outage");  // no deadline to wait for
      ASSERT_TRUE(answer.decision.ok());
      EXPECT_TRUE(answer.decision->degraded);
      EXPECT_EQ(answer.decision->verdict.allowed, c.allowed);
      EXPECT_EQ(answer.decision->shadow_denied, c.shadow_denied);
      ++decided;
    }
  }
  EXPECT_EQ(counting_->calls, 3) << decided << " decisions, no store call";
  EXPECT_EQ(timers_.pending(), 0u) << "no deadline armed";
  EXPECT_EQ(limiter_->stats().store_errors, 3u) << "refusals are not store errors";
  EXPECT_EQ(limiter_->stats().degraded, 3u + decided);
  const DefenceMetrics& metrics = limiter_->metrics().defences();
  EXPECT_EQ(metrics.breaker_rejections(), static_cast<std::uint64_t>(decided));

  // After open_for, one probe goes to Redis; the rest are still refused. It times out: open.
  clock_.advance(kMicrosPerSecond);
  std::shared_future<Answer> probe = start("window", "probe");
  EXPECT_EQ(limiter_->circuit_breaker_state(), BreakerState::kHalfOpen);
  EXPECT_EQ(counting_->calls, 4);
  EXPECT_TRUE(decide_now("closed", "meanwhile").at_once);
  pass_store_timeout();
  ASSERT_EQ(probe.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(probe.get().decision->degraded);
  EXPECT_EQ(limiter_->circuit_breaker_state(), BreakerState::kOpen);
  EXPECT_TRUE(decide_now("window", "refused").at_once);

  // Redis is back: the next probe's answer closes the breaker.
  resume();
  clock_.advance(kMicrosPerSecond);
  const Answer recovered = decide("window", "probe-2");
  ASSERT_TRUE(recovered.decision.ok());
  EXPECT_FALSE(recovered.decision->degraded);
  EXPECT_EQ(limiter_->circuit_breaker_state(), BreakerState::kClosed);
  EXPECT_FALSE(decide("closed", "after").decision->degraded);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kOpen), 2u);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kHalfOpen), 2u);
  EXPECT_EQ(metrics.breaker_transitions(BreakerState::kClosed), 1u);
  std::string text;
  limiter_->metrics().write(text);
  EXPECT_NE(text.find("sluice_circuit_breaker_state 0\n"), std::string::npos) << text;
}

TEST_F(DefencesLimiterTest, TheBreakerOpensOnARefusedConnectionToo) {
  make_limiter({.failure_threshold = 2, .open_for = kMicrosPerSecond});
  ASSERT_TRUE(server_->kill_hard().ok());
  for (int i = 0; i < 2; ++i) {
    const Answer answer = decide("closed", "x");  // refused by the client: no deadline needed
    EXPECT_TRUE(answer.decision->degraded);
  }
  ASSERT_EQ(limiter_->circuit_breaker_state(), BreakerState::kOpen);
  const std::int64_t calls = counting_->calls;
  const Answer refused = decide("closed", "x");
  EXPECT_TRUE(refused.at_once);
  EXPECT_FALSE(refused.decision->verdict.allowed);
  EXPECT_EQ(counting_->calls, calls);
}

TEST_F(DefencesLimiterTest, RolloutEnforcesAStableShareAndCountsEachGroup) {
  const std::shared_ptr<const policy::Policy> rollout = lookup_.find("rollout");
  const policy::Policy& policy = *rollout;
  constexpr int kSubjects = 1000;
  int enforced = 0;
  for (int i = 0; i < kSubjects; ++i) {
    const std::string subject = "user-" + std::to_string(i);
    StatusOr<Decision> first = acquire_held(*limiter_, rollout, subject);
    StatusOr<Decision> second = acquire_held(*limiter_, rollout, subject);
    StatusOr<Decision> cached = acquire_held(*limiter_, rollout, subject);
    ASSERT_TRUE(first.ok() && second.ok() && cached.ok());
    EXPECT_TRUE(first->verdict.allowed);
    EXPECT_FALSE(first->shadow_denied);
    const bool in_group = enforced_for(policy, subject);
    enforced += in_group;
    for (const Decision* denied : {&*second, &*cached}) {
      EXPECT_EQ(denied->verdict.allowed, !in_group) << subject;
      EXPECT_EQ(denied->shadow_denied, !in_group) << subject;
      EXPECT_EQ(denied->mode, in_group ? policy::Mode::kEnforce : policy::Mode::kShadow);
    }
  }
  EXPECT_NEAR(enforced / double(kSubjects), 0.30, 0.05);
  const auto [enforced_group, shadowed_group] = limiter_->metrics().defences().rollout("rollout");
  EXPECT_EQ(enforced_group.allowed, static_cast<std::uint64_t>(enforced));
  EXPECT_EQ(enforced_group.denied, 2u * enforced);
  EXPECT_EQ(enforced_group.shadow_denied, 0u);
  EXPECT_EQ(shadowed_group.allowed, static_cast<std::uint64_t>(kSubjects - enforced));
  EXPECT_EQ(shadowed_group.shadow_denied, 2u * (kSubjects - enforced));
  EXPECT_EQ(shadowed_group.denied, 0u);
  std::string text;
  limiter_->metrics().write(text);
  EXPECT_NE(text.find("sluice_rollout_decisions_total{policy=\"rollout\",group=\"enforced\","
                      "outcome=\"denied\"} " +
                      std::to_string(2 * enforced) + "\n"),
            std::string::npos)
      << text;

  // A refused quota charge follows the same groups.
  for (int i = 0; i < 20; ++i) {
    const std::string subject = "user-" + std::to_string(i);
    StatusOr<Decision> charge = limiter_
                                    ->block_on({.app = "web",
                                                .policy = "rollout",
                                                .operation = Operation::kCharge,
                                                .subject = subject,
                                                .cost = 1})
                                    .decision;
    ASSERT_TRUE(charge.ok()) << charge.status().to_string();
    EXPECT_EQ(charge->verdict.allowed, !enforced_for(policy, subject)) << subject;
    EXPECT_EQ(charge->shadow_denied, !enforced_for(policy, subject)) << subject;
  }

  // A failure mode's denial follows the same groups: fail_closed denies only enforced subjects.
  make_limiter({.failure_threshold = 1, .open_for = kMicrosPerSecond});
  pause();
  std::shared_future<Answer> opening = start("rollout", "opener");
  pass_store_timeout();
  ASSERT_EQ(opening.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  ASSERT_EQ(limiter_->circuit_breaker_state(), BreakerState::kOpen);
  for (int i = 0; i < 200; ++i) {
    const std::string subject = "outage-" + std::to_string(i);
    const Answer answer = decide_now("rollout", subject);
    ASSERT_TRUE(answer.decision.ok());
    EXPECT_TRUE(answer.decision->degraded);
    EXPECT_EQ(answer.decision->verdict.allowed, !enforced_for(policy, subject));
    EXPECT_EQ(answer.decision->shadow_denied, !enforced_for(policy, subject));
  }
  // And failure mode local: the in-process store's denials, enforced or shadowed by group.
  const policy::Policy& local = *lookup_.find("rollout-local");
  int enforced_denials = 0;
  int shadowed_denials = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string subject = "local-" + std::to_string(i);
    const bool in_group = enforced_for(local, subject);
    for (int n = 0; n < 3; ++n) {
      const Answer answer = decide_now("rollout-local", subject);
      ASSERT_TRUE(answer.decision.ok());
      EXPECT_TRUE(answer.decision->degraded);
      if (in_group) {
        EXPECT_FALSE(answer.decision->shadow_denied);
        enforced_denials += answer.decision->verdict.allowed ? 0 : 1;
      } else {
        EXPECT_TRUE(answer.decision->verdict.allowed) << subject;
        shadowed_denials += answer.decision->shadow_denied ? 1 : 0;
      }
    }
  }
  EXPECT_GT(enforced_denials, 0) << "the local store (a third of 3 per hour) denies";
  EXPECT_GT(shadowed_denials, 0);
}

}  // namespace
}  // namespace sluice::service
