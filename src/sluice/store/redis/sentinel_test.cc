// Integration tests through Redis Sentinel (tests/testing/redis_sentinel.h: a master, a replica
// and three sentinels on free loopback ports, stopped by PID): decisions on the master the
// sentinels name, exact; a master killed under load, decisions failing until a sentinel promotes
// the replica and resuming there by themselves; an unknown master name refused clearly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/eventually.h"
#include "testing/redis_sentinel.h"
#include "testing/subprocess.h"

namespace sluice::store {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::shared_ptr<redis::Multiplexer> client_for(const std::string& url,
                                               redis::MultiplexerOptions base = {}) {
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::open(url, std::move(base));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::shared_ptr<redis::Multiplexer>(std::move(*client)) : nullptr;
}

SubjectRef ref(const std::vector<algorithm::Limit>& limits, std::string_view subject) {
  return {.policy = "sentinel.policy", .limits = limits, .subject = subject};
}

// `threads` × `each` acquires of one subject at once: how many were admitted, and errors.
std::pair<int, int> race(RedisStore& store, const std::vector<algorithm::Limit>& limits,
                         const std::string& subject, int threads, int each) {
  std::atomic<int> allowed{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> racers;
  for (int t = 0; t < threads; ++t) {
    racers.emplace_back([&] {
      for (int i = 0; i < each; ++i) {
        StatusOr<Decision> decision = store::acquire_now(store, ref(limits, subject), 1);
        if (!decision.ok()) {
          ++errors;
        } else if (decision->verdict.allowed) {
          ++allowed;
        }
      }
    });
  }
  for (std::thread& racer : racers) racer.join();
  return {allowed.load(), errors.load()};
}

TEST(RedisSentinelTest, DecisionsFollowTheMasterThroughAFailover) {
  StatusOr<std::unique_ptr<test::RedisSentinelGroup>> group = test::RedisSentinelGroup::start();
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  std::shared_ptr<redis::Multiplexer> client =
      client_for((*group)->url(), {.command_timeout = 500 * kMicrosPerMilli});
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  ASSERT_TRUE(store.check_configuration().ok());
  EXPECT_EQ(store.address().rfind("master \"sluice-master\" of sentinels 127.0.0.1:", 0), 0U)
      << "messages name the sentinels, not a default host: " << store.address();
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = 50, .window = kMicrosPerHour}};
  EXPECT_EQ(race(store, limits, "before", 8, 20), std::make_pair(50, 0));

  // Kill the master under load; decisions fail until the replica is promoted, then resume.
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0};
  std::atomic<int> answered_after_failure{0};
  std::atomic<int> answered_before_failure{0};
  std::atomic<SteadyClock::rep> last_failure{0};
  const std::vector<algorithm::Limit> loose = {
      algorithm::FixedWindow{.limit = 1'000'000, .window = kMicrosPerHour}};
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        StatusOr<Decision> decision =
            store::acquire_now(store, ref(loose, "load" + std::to_string(t)), 1);
        if (!decision.ok()) {
          ++failed;
          last_failure = SteadyClock::now().time_since_epoch().count();
        } else if (failed.load() > 0) {
          ++answered_after_failure;
        } else {
          ++answered_before_failure;
        }
      }
    });
  }
  // The load runs before the kill (as many answers as are counted after it).
  ASSERT_TRUE(test::eventually([&] { return answered_before_failure.load() >= 100; },
                               std::chrono::seconds(30)));
  const SteadyClock::time_point killed_at = SteadyClock::now();
  ASSERT_TRUE((*group)->master().kill_hard().ok());
  const auto deadline = SteadyClock::now() + std::chrono::seconds(60);
  while (answered_after_failure.load() < 100 && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  for (std::thread& thread : load) thread.join();
  ASSERT_GE(answered_after_failure.load(), 100) << "decisions did not resume within 60 s";
  EXPECT_GT(failed.load(), 0) << "the outage was never seen";
  const double gap =
      std::chrono::duration<double>(
          SteadyClock::time_point(SteadyClock::duration(last_failure.load())) - killed_at)
          .count();
  std::printf("sentinel failover gap: %.2f s with down-after-milliseconds 1000\n", gap);
  RecordProperty("failover_gap_ms", static_cast<int>(gap * 1000));

  // The replica is the master now, and decisions land there.
  StatusOr<std::uint16_t> reported = (*group)->reported_master_port();
  ASSERT_TRUE(reported.ok()) << reported.status().to_string();
  EXPECT_EQ(*reported, (*group)->replica().port());
  StatusOr<std::string> role =
      test::run_checked({"redis-cli", "-p", std::to_string((*group)->replica().port()), "ROLE"});
  ASSERT_TRUE(role.ok());
  EXPECT_TRUE(role->starts_with("master")) << *role;
  EXPECT_EQ(race(store, limits, "after", 8, 20), std::make_pair(50, 0));
}

TEST(RedisSentinelTest, AMasterNameNoSentinelMonitorsIsAClearError) {
  StatusOr<std::unique_ptr<test::RedisSentinelGroup>> group =
      test::RedisSentinelGroup::start({.sentinels = 1});
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  std::string url = (*group)->url();
  url = url.substr(0, url.rfind('/')) + "/no-such-master";
  std::shared_ptr<redis::Multiplexer> client = client_for(url);
  ASSERT_NE(client, nullptr);
  StatusOr<redis::Reply> reply = client->command({"PING"});
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kFailedPrecondition) << "a configuration error";
  EXPECT_THAT(reply.status().message(), ::testing::HasSubstr("does not monitor a master named"));
  EXPECT_THAT(reply.status().message(), ::testing::HasSubstr("no-such-master"));
}

}  // namespace
}  // namespace sluice::store
