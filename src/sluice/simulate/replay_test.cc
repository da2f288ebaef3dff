#include "sluice/simulate/replay.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::simulate {
namespace {

using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::RefillMode;
using algorithm::SlidingLog;
using algorithm::SlidingWindow;
using algorithm::TokenBucket;

constexpr Micros kEpoch = 1'700'000'000'000'000;

policy::Policy policy_of(std::string name, std::vector<Limit> limits) {
  policy::Policy policy;
  policy.name = std::move(name);
  policy.apps = {"*"};
  policy.limits = std::move(limits);
  return policy;
}

struct Scenario {
  std::string name;
  std::vector<Limit> limits;
  std::optional<algorithm::Penalty> penalty;
};

// Three denials within 2 s block for 1 s, then 2 s, up to 4 s; forgotten after 10 s quiet.
constexpr algorithm::Penalty kPenalty{.after = 3,
                                      .within = 2 * kMicrosPerSecond,
                                      .block = kMicrosPerSecond,
                                      .escalate = 2,
                                      .max = 4 * kMicrosPerSecond,
                                      .quiet = 10 * kMicrosPerSecond};

std::vector<Scenario> scenarios() {
  const Micros s = kMicrosPerSecond;
  return {
      {"token_bucket_smooth", {TokenBucket{.capacity = 5, .refill = 3, .period = s}}},
      {"token_bucket_warm_up",
       {TokenBucket{.capacity = 6, .refill = 2, .period = s, .initial = 1}}},
      {"token_bucket_interval",
       {TokenBucket{
           .capacity = 4, .refill = 4, .period = s, .refill_mode = RefillMode::kInterval}}},
      {"gcra", {Gcra{.rate = 3, .period = s, .burst = 2}}},
      {"gcra_odd_interval", {Gcra{.rate = 7, .period = s, .burst = 0}}},
      {"leaky_bucket", {LeakyBucket{.rate = 4, .period = s, .max_delay = 500'000}}},
      {"fixed_window", {FixedWindow{.limit = 5, .window = s}}},
      {"sliding_window", {SlidingWindow{.limit = 5, .window = s}}},
      {"sliding_log", {SlidingLog{.limit = 5, .window = s}}},
      {"two_limits",
       {Gcra{.rate = 4, .period = s, .burst = 3}, FixedWindow{.limit = 9, .window = 3 * s}}},
      {"gcra_penalty", {Gcra{.rate = 3, .period = s, .burst = 2}}, kPenalty},
      {"warm_up_two_limits_penalty",
       {TokenBucket{.capacity = 6, .refill = 2, .period = s, .initial = 1},
        FixedWindow{.limit = 9, .window = 3 * s}},
       kPenalty},
      {"three_limits",
       {TokenBucket{.capacity = 3, .refill = 1, .period = 200'000},
        SlidingWindow{.limit = 8, .window = 2 * s}, SlidingLog{.limit = 12, .window = 5 * s}}},
  };
}

// Random traffic on a few subjects: bursts within a microsecond, gaps across windows and past
// every expiry, costs 0, 1 and more than the limits grant at once.
std::vector<Event> random_traffic(std::uint32_t seed, std::size_t count, std::uint32_t subjects) {
  std::mt19937 random(seed);
  std::vector<Event> events;
  Micros now = kEpoch;
  for (std::size_t i = 0; i < count; ++i) {
    switch (random() % 10) {
      case 0:
        break;  // same microsecond
      case 1:
        now += static_cast<Micros>(random() % (20 * kMicrosPerSecond));
        break;
      default:
        now += static_cast<Micros>(random() % 400'000);
        break;
    }
    const std::uint32_t pick = static_cast<std::uint32_t>(random() % 20);
    const std::int64_t cost = pick < 3 ? 0 : pick < 15 ? 1 : static_cast<std::int64_t>(pick - 13);
    events.push_back(
        {.time = now, .subject = static_cast<std::uint32_t>(random() % subjects), .cost = cost});
  }
  return events;
}

TEST(ReplayTest, DecidesAsTheMemoryStoreDecisionForDecision) {
  for (const Scenario& scenario : scenarios()) {
    for (std::uint32_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(scenario.name + " seed " + std::to_string(seed));
      policy::Policy policy = policy_of("p." + scenario.name, scenario.limits);
      policy.penalty = scenario.penalty;
      StatusOr<VariantReplay> replay =
          VariantReplay::create({.label = "a", .policy = policy}, ReplayOptions{});
      ASSERT_TRUE(replay.ok()) << replay.status().message();
      ManualClock clock(kEpoch);
      store::MemoryStore store(clock);
      std::size_t costs_seen[3] = {0, 0, 0};
      std::size_t allowed = 0;
      std::size_t denied = 0;
      std::size_t blocked = 0;
      for (const Event& event : random_traffic(seed, 4000, 4)) {
        clock.set(event.time);
        const std::string subject = "user-" + std::to_string(event.subject);
        const StatusOr<Decision> expected =
            store.acquire({.policy = policy.name,
                           .limits = policy.limits,
                           .subject = subject,
                           .penalty = policy.penalty ? &*policy.penalty : nullptr},
                          event.cost);
        ASSERT_TRUE(expected.ok()) << expected.status().message();
        const Decision got = replay->decide(event.subject, event.cost, event.time);
        ASSERT_EQ(got.verdict, expected->verdict) << "at " << event.time << " cost " << event.cost;
        ASSERT_EQ(got.limit_index, expected->limit_index);
        ++costs_seen[std::min<std::int64_t>(event.cost, 2)];
        ++(got.verdict.allowed ? allowed : denied);
        if (got.verdict.blocked_until) ++blocked;
      }
      // The sequence exercised what it claims to: every cost class, both outcomes.
      EXPECT_GT(costs_seen[0], 0u);
      EXPECT_GT(costs_seen[1], 0u);
      EXPECT_GT(costs_seen[2], 0u);
      EXPECT_GT(allowed, 100u);
      EXPECT_GT(denied, 100u);
      if (scenario.penalty) {
        EXPECT_GT(blocked, 10u);  // the box did block
      }
    }
  }
}

TEST(ReplayTest, RefusesConcurrencyLimitsNamingTheLimit) {
  const StatusOr<VariantReplay> replay = VariantReplay::create(
      {.label = "a",
       .policy = policy_of("jobs", {FixedWindow{.limit = 5, .window = kMicrosPerSecond},
                                    algorithm::Concurrency{.limit = 2, .lease_ttl = 1'000'000}})},
      ReplayOptions{});
  ASSERT_FALSE(replay.ok());
  EXPECT_EQ(replay.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(replay.status().message().find("limits[1]: concurrency"), std::string::npos);
}

TEST(ReplayTest, RoutesEventsByPolicyAndAppAndTalliesPerVariant) {
  TrafficNames names;
  policy::Policy strict = policy_of("api", {FixedWindow{.limit = 1, .window = kMicrosPerSecond}});
  strict.apps = {"web"};
  policy::Policy loose = strict;
  loose.limits = {FixedWindow{.limit = 2, .window = kMicrosPerSecond}};
  policy::Policy other =
      policy_of("other", {FixedWindow{.limit = 100, .window = kMicrosPerSecond}});
  StatusOr<Replay> replay = Replay::create({{.label = "strict", .policy = strict},
                                            {.label = "loose", .policy = loose},
                                            {.label = "other", .policy = other}},
                                           names, {.bucket = kMicrosPerSecond, .top = 1});
  ASSERT_TRUE(replay.ok());
  const std::uint32_t api = names.policies.intern("api");
  const std::uint32_t web = names.apps.intern("web");
  const std::uint32_t batch = names.apps.intern("batch");
  const std::uint32_t alice = names.subjects.intern("alice");
  const std::uint32_t bob = names.subjects.intern("bob");
  // alice: 3 in one second; bob: 2 in one second; then one event from an app api does not list.
  for (Micros t : {0, 1, 2})
    replay->add({.time = kEpoch + t, .subject = alice, .policy = api, .app = web});
  for (Micros t : {3, 4})
    replay->add({.time = kEpoch + t, .subject = bob, .policy = api, .app = web});
  replay->add({.time = kEpoch + kMicrosPerSecond, .subject = bob, .policy = api, .app = batch});

  const std::vector<VariantReport> reports = replay->reports();
  ASSERT_EQ(reports.size(), 3u);
  EXPECT_EQ(reports[0].requests, 5u);
  EXPECT_EQ(reports[0].denied, 3u);  // alice 2, bob 1
  EXPECT_EQ(reports[0].subjects, 2u);
  EXPECT_EQ(reports[0].subjects_denied, 2u);
  EXPECT_EQ(reports[0].other_app, 1u);
  EXPECT_EQ(reports[0].top_denied, (std::vector<DeniedSubject>{{"alice", 2, 3}}));
  EXPECT_EQ(reports[0].over_time,
            (std::vector<TimeBucket>{{.start = kEpoch, .requests = 5, .denied = 3}}));
  EXPECT_EQ(reports[1].denied, 1u);  // alice's third
  EXPECT_EQ(reports[1].subjects_denied, 1u);
  EXPECT_EQ(reports[2].requests, 0u);  // every event named api

  const std::vector<OutcomeChanges> changes = replay->outcome_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first, "strict");
  EXPECT_EQ(changes[0].second, "loose");
  EXPECT_EQ(changes[0].denied_only_by_first, 1u);
  EXPECT_EQ(changes[0].examples_first, std::vector<std::string>{"bob"});
  EXPECT_EQ(changes[0].denied_only_by_second, 0u);
}

TEST(ReplayTest, EventsNamingNoPolicyGoToEveryVariant) {
  TrafficNames names;
  StatusOr<Replay> replay = Replay::create(
      {{.label = "a",
        .policy = policy_of("a", {FixedWindow{.limit = 1, .window = kMicrosPerSecond}})},
       {.label = "b",
        .policy = policy_of("b", {FixedWindow{.limit = 5, .window = kMicrosPerSecond}})}},
      names, ReplayOptions{});
  ASSERT_TRUE(replay.ok());
  const std::uint32_t key = names.subjects.intern("k");
  for (Micros t : {0, 1, 2}) replay->add({.time = kEpoch + t, .subject = key});
  const std::vector<VariantReport> reports = replay->reports();
  EXPECT_EQ(reports[0].denied, 2u);
  EXPECT_EQ(reports[1].denied, 0u);
  EXPECT_EQ(reports[1].requests, 3u);
}

}  // namespace
}  // namespace sluice::simulate
