// The targets `sluice bench` loads, end to end through the load generator: the in-memory store and
// a real redis-server on a free loopback port.
#include "sluice/bench/targets.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sluice/policy/document.h"
#include "testing/redis_server.h"

namespace sluice::bench {
namespace {

using ::testing::HasSubstr;

policy::Policy fixed_window(std::int64_t limit) {
  policy::ParsedPolicy parsed = policy::policy_from_text(
      R"({"name": "bench", "apps": ["*"], "limits": [{"algorithm": "fixed_window", "limit": )" +
      std::to_string(limit) + R"(, "window": "365d"}]})");
  EXPECT_TRUE(parsed.policy) << policy::join_errors(parsed.errors);
  return *parsed.policy;
}

// 100 ms from 4 threads on one hot key.
LoadOptions short_load() {
  return {.threads = 4,
          .duration_ns = 100'000'000,
          .distribution = {.kind = DistributionKind::kHot},
          .keys = 1,
          .key_prefix = "targets-test:"};
}

TEST(TargetsTest, MemoryTargetDecidesAndEnforcesTheLimit) {
  StatusOr<std::unique_ptr<Target>> target =
      make_target({.kind = TargetKind::kMemory, .policy = fixed_window(10)});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  const LoadResult r = run_load(**target, short_load());
  EXPECT_FALSE((*target)->store_calls().has_value());  // no calls to count in memory
  EXPECT_GT(r.decisions, 10u);
  EXPECT_EQ(r.allowed, 10u);  // one hot key, 10 per (epoch-aligned) year
  EXPECT_EQ(r.denied, r.decisions - 10);
  EXPECT_EQ(r.errors, 0u);
  EXPECT_EQ(r.degraded, 0u);
}

TEST(TargetsTest, RedisTargetDecidesOnRedisAndEnforcesTheLimit) {
  StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  StatusOr<std::unique_ptr<Target>> target =
      make_target({.kind = TargetKind::kRedis,
                   .redis_url = "redis://127.0.0.1:" + std::to_string((*server)->port()),
                   .policy = fixed_window(10)});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  const std::optional<Target::StoreCalls> before = (*target)->store_calls();
  const LoadResult r = run_load(**target, short_load());
  EXPECT_GT(r.decisions, 10u);
  EXPECT_EQ(r.allowed, 10u);
  EXPECT_EQ(r.errors, 0u) << (*target)->first_error();
  EXPECT_EQ(r.degraded, 0u);
  // The store's batches: every decision went out in some call, none twice.
  const std::optional<Target::StoreCalls> after = (*target)->store_calls();
  ASSERT_TRUE(before && after);
  EXPECT_GE(after->decisions - before->decisions, r.decisions);
  EXPECT_GE(after->calls - before->calls, 1u);
  EXPECT_LE(after->calls - before->calls, after->decisions - before->decisions);
}

TEST(TargetsTest, ConcurrencyLeasesAreGivenBack) {
  policy::ParsedPolicy parsed = policy::policy_from_text(
      R"({"name": "bench", "apps": ["*"],
          "limits": [{"algorithm": "concurrency", "limit": 1, "lease_ttl": "1h"}]})");
  ASSERT_TRUE(parsed.policy);
  StatusOr<std::unique_ptr<Target>> target =
      make_target({.kind = TargetKind::kMemory, .policy = *parsed.policy});
  ASSERT_TRUE(target.ok());
  LoadOptions one_thread = short_load();
  one_thread.threads = 1;
  const LoadResult r = run_load(**target, one_thread);
  EXPECT_EQ(r.denied, 0u);  // each lease is released before the next request
  EXPECT_GT(r.allowed, 1u);
}

TEST(TargetsTest, UnreachableRedisAndMissingUrlsAreRefusedUpFront) {
  StatusOr<std::uint16_t> port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok());
  StatusOr<std::unique_ptr<Target>> down =
      make_target({.kind = TargetKind::kRedis,
                   .redis_url = "redis://127.0.0.1:" + std::to_string(*port),
                   .policy = fixed_window(10)});
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);

  StatusOr<std::unique_ptr<Target>> http =
      make_target({.kind = TargetKind::kHttp, .server_policy = "bench"});
  ASSERT_FALSE(http.ok());
  EXPECT_EQ(http.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(http.status().message(), HasSubstr("--url"));

  StatusOr<std::unique_ptr<Target>> no_url =
      make_target({.kind = TargetKind::kRedis, .policy = fixed_window(10)});
  ASSERT_FALSE(no_url.ok());
  EXPECT_THAT(no_url.status().message(), HasSubstr("--redis"));
}

TEST(TargetsTest, NamesAndRedactedUrls) {
  EXPECT_EQ(*parse_target_kind("redis"), TargetKind::kRedis);
  EXPECT_EQ(*parse_target_kind("grpc"), TargetKind::kGrpc);
  EXPECT_FALSE(parse_target_kind("quic").ok());
  EXPECT_EQ(target_kind_name(TargetKind::kHttp), "http");
  EXPECT_EQ(redacted_redis_url("redis://alice:secret@localhost:6380/2"),
            "redis://alice:***@localhost:6380/2");
  EXPECT_EQ(redacted_redis_url("redis://:secret@[::1]"), "redis://:***@[::1]:6379/0");
  EXPECT_EQ(redacted_redis_url("redis://127.0.0.1"), "redis://127.0.0.1:6379/0");
}

}  // namespace
}  // namespace sluice::bench
