// The http target of `sluice bench` against a real decision server in process on a free loopback
// port (memory store, manual clock: windows never move, so the counts are exact), and the flags
// each target takes.
#include "sluice/bench/http_target.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sluice/bench/targets.h"
#include "sluice/client/http_url.h"
#include "sluice/policy/document.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/server.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "testing/redis_server.h"

namespace sluice::bench {
namespace {

using ::testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;  // a realistic now, in µs

constexpr std::string_view kPolicies = R"([
  {"name": "ten", "apps": ["bench"], "limits": [
     {"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "one-at-a-time", "apps": ["*"], "limits": [
     {"algorithm": "concurrency", "limit": 1, "lease_ttl": "1h"}]}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

// What `sluice serve` runs over the memory store: limiter, decision API, router, HTTP server.
class DecisionServer {
 public:
  DecisionServer()
      : store_(clock_),
        local_(clock_),
        lookup_(policies()),
        limiter_(store_, &local_, {.policies = &lookup_}),
        api_(limiter_, store_, metrics_, {.clock = &clock_}) {
    auto router = std::make_shared<http::Router>();
    api_.add_routes(*router);
    StatusOr<std::unique_ptr<http::HttpServer>> server =
        http::HttpServer::start({.port = 0, .io_threads = 2, .access_log = false}, router);
    EXPECT_TRUE(server.ok()) << server.status().to_string();
    if (server.ok()) server_ = std::move(*server);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::size_t connections() const { return server_->connections(); }

 private:
  ManualClock clock_{kEpoch};
  store::MemoryStore store_;
  store::MemoryStore local_;
  service::StaticPolicyLookup lookup_;
  service::Limiter limiter_;
  http::Metrics metrics_;
  http::DecisionApi api_;
  std::unique_ptr<http::HttpServer> server_;
};

// 100 ms of closed-loop load on one hot key.
LoadOptions hot_key_load(int threads) {
  return {.threads = threads,
          .duration_ns = 100'000'000,
          .distribution = {.kind = DistributionKind::kHot},
          .keys = 1,
          .key_prefix = "http-target-test:"};
}

TEST(HttpTargetTest, AllowsExactlyTheServersLimitAndDeniesTheRest) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> target = make_target({.kind = TargetKind::kHttp,
                                                          .http_url = server.url(),
                                                          .server_policy = "ten",
                                                          .app = "bench"});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  const LoadResult r = run_load(**target, hot_key_load(4));
  EXPECT_GT(r.decisions, 10u);
  EXPECT_EQ(r.allowed, 10u);  // the prime decision used another subject, at cost 0
  EXPECT_EQ(r.denied, r.decisions - 10);
  EXPECT_EQ(r.errors, 0u) << (*target)->first_error();
  EXPECT_EQ(r.degraded, 0u);
}

TEST(HttpTargetTest, EachLoadThreadKeepsOneKeepAliveConnection) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> target =
      make_http_target({.url = server.url(), .policy = "ten", .app = "bench"});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  EXPECT_EQ(server.connections(), 1u);  // the prime decision's
  run_load(**target, hot_key_load(4));
  EXPECT_EQ(server.connections(), 1u + 4u);
  // A smaller point after a larger one reuses threads 0 and 1's connections.
  const LoadResult r = run_load(**target, hot_key_load(2));
  EXPECT_EQ(r.errors, 0u) << (*target)->first_error();
  EXPECT_EQ(server.connections(), 1u + 4u);
}

TEST(HttpTargetTest, AsyncCallersEachHaveAConnectionAndGetExactlyTheLimit) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> target = make_http_target(
      {.url = server.url(), .policy = "ten", .app = "bench", .asynchronous = true});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  LoadOptions load = hot_key_load(8);
  load.mode = LoadMode::kAsync;
  const LoadResult r = run_load(**target, load);
  EXPECT_GT(r.decisions, 10u);
  EXPECT_EQ(r.allowed, 10u);
  EXPECT_EQ(r.denied, r.decisions - 10);
  EXPECT_EQ(r.errors, 0u) << (*target)->first_error();
  // One per caller (the prime decision's connection closed with its blocking client).
  EXPECT_EQ(server.connections(), 8u);
  // A second point with fewer callers keeps the connections it has.
  load.threads = 3;
  EXPECT_EQ(run_load(**target, load).errors, 0u) << (*target)->first_error();
  EXPECT_EQ(server.connections(), 8u);
}

TEST(HttpTargetTest, AsyncCallersRefuseLeasesTheyCannotGiveBack) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> target = make_http_target(
      {.url = server.url(), .policy = "one-at-a-time", .app = "bench", .asynchronous = true});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  LoadOptions load = hot_key_load(1);
  load.mode = LoadMode::kAsync;
  const LoadResult r = run_load(**target, load);
  // The one allowed decision is an error (its lease is kept); the lease then denies the rest.
  EXPECT_EQ(r.errors, 1u);
  EXPECT_EQ(r.denied, r.decisions - 1);
  EXPECT_THAT((*target)->first_error(), HasSubstr("--mode closed"));
}

TEST(HttpTargetTest, ConcurrencyLeasesAreGivenBack) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> target =
      make_http_target({.url = server.url(), .policy = "one-at-a-time", .app = "bench"});
  ASSERT_TRUE(target.ok()) << target.status().to_string();
  const LoadResult r = run_load(**target, hot_key_load(1));
  EXPECT_EQ(r.denied, 0u);  // each lease is released before the next request
  EXPECT_GT(r.allowed, 1u);
  EXPECT_EQ(r.errors, 0u) << (*target)->first_error();
}

TEST(HttpTargetTest, MissingPolicyForeignAppAndDeadServerAreRefusedUpFront) {
  DecisionServer server;
  StatusOr<std::unique_ptr<Target>> missing =
      make_http_target({.url = server.url(), .policy = "nope", .app = "bench"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("policy \"nope\""));

  StatusOr<std::unique_ptr<Target>> foreign =
      make_http_target({.url = server.url(), .policy = "ten", .app = "other"});
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kNotFound);

  StatusOr<std::uint16_t> free_port = test::RedisServer::pick_free_port();
  ASSERT_TRUE(free_port.ok());
  StatusOr<std::unique_ptr<Target>> dead = make_http_target(
      {.url = "http://127.0.0.1:" + std::to_string(*free_port), .policy = "ten", .app = "bench"});
  ASSERT_FALSE(dead.ok());
  EXPECT_EQ(dead.status().code(), StatusCode::kUnavailable);
}

TEST(HttpTargetTest, ParsesPlainHttpUrlsOnly) {
  struct Case {
    std::string_view url;
    std::string host;  // empty: refused
    std::uint16_t port = 0;
    std::string_view error = "";
  };
  const Case cases[] = {
      {"http://127.0.0.1:8080", "127.0.0.1", 8080},
      {"http://127.0.0.1:8080/", "127.0.0.1", 8080},
      {"http://localhost", "localhost", 80},
      {"http://[::1]:9000", "::1", 9000},
      {"http://[::1]", "::1", 80},
      {"http://127.0.0.1:65535", "127.0.0.1", 65535},
      {"https://127.0.0.1:8443", "", 0, "https is not supported"},
      {"127.0.0.1:8080", "", 0, "must be http://HOST:PORT"},
      {"http://127.0.0.1:8080/v1/acquire", "", 0, "no path"},
      {"http://u:p@127.0.0.1:8080", "", 0, "no path, query or user"},
      {"http://:8080", "", 0, "host is empty"},
      {"http://127.0.0.1:", "", 0, "port must be"},
      {"http://127.0.0.1:0", "", 0, "port must be"},
      {"http://127.0.0.1:65536", "", 0, "port must be"},
      {"http://127.0.0.1:80x", "", 0, "port must be"},
      {"http://::1:8080", "", 0, "in brackets"},
      {"http://[::1:8080", "", 0, "unclosed ["},
      {"http://[[.]", "", 0, "must be an IPv6 address"},  // found by fuzzing
      {"http://[localhost]:80", "", 0, "must be an IPv6 address"},
      {"http://[::ffff:10.0.0.1]:80", "::ffff:10.0.0.1", 80},
      {"http://a]b:80", "", 0, "a bracket"},
      {"http://a b:80", "", 0, "a space"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    StatusOr<HttpUrl> url = parse_http_url(c.url);
    if (c.host.empty()) {
      ASSERT_FALSE(url.ok());
      EXPECT_EQ(url.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(url.status().message(), HasSubstr(c.error));
      continue;
    }
    ASSERT_TRUE(url.ok()) << url.status().to_string();
    EXPECT_EQ(url->host, c.host);
    EXPECT_EQ(url->port, c.port);
  }
  EXPECT_EQ(format_http_url({.host = "::1", .port = 9000}), "http://[::1]:9000");
  EXPECT_EQ(format_http_url({.host = "127.0.0.1", .port = 80}), "http://127.0.0.1:80");
}

TEST(HttpTargetTest, FlagsThatDoNotFitTheTargetAreRefusedByName) {
  struct Case {
    TargetKind kind;
    std::vector<std::string> given;
    std::string_view error;  // empty: accepted
  };
  const Case cases[] = {
      {TargetKind::kHttp, {"--url", "--policy"}, ""},
      {TargetKind::kHttp, {"--url", "--policy", "--app", "--cost", "--threads"}, ""},
      {TargetKind::kHttp,
       {"--url", "--policy", "--redis"},
       "--redis does not apply to --target http"},
      {TargetKind::kHttp, {"--url", "--policy", "--connections"}, "--connections does not apply"},
      {TargetKind::kHttp, {"--url", "--policy", "--io-threads"}, "--io-threads does not apply"},
      {TargetKind::kHttp, {"--url", "--policy", "--algorithm"}, "--algorithm does not apply"},
      {TargetKind::kHttp, {"--url", "--policy", "--limit"}, "--limit does not apply"},
      {TargetKind::kHttp, {"--url", "--policy", "--window"}, "--window does not apply"},
      {TargetKind::kHttp, {"--url", "--policy", "--policy-file"}, "--policy-file does not apply"},
      {TargetKind::kHttp, {"--policy"}, "--target http needs --url"},
      {TargetKind::kHttp, {"--url"}, "--target http needs --policy"},
      {TargetKind::kMemory, {"--algorithm", "--limit"}, ""},
      {TargetKind::kMemory, {"--url"}, "--url is only for --target http"},
      {TargetKind::kRedis, {"--redis", "--policy"}, "--policy is only for --target http"},
      {TargetKind::kRedis, {"--redis", "--connections"}, ""},
      {TargetKind::kMemory, {"--redis"}, "--redis is only for --target redis"},
      {TargetKind::kGrpc, {"--url"}, ""},
      {TargetKind::kGrpc, {"--url", "--descriptor", "--app"}, ""},
      {TargetKind::kGrpc, {"--descriptor"}, "--target grpc needs --url"},
      {TargetKind::kGrpc, {"--url", "--policy"}, "--policy does not apply to --target grpc"},
      {TargetKind::kGrpc, {"--url", "--limit"}, "match it with --descriptor"},
      {TargetKind::kGrpc, {"--url", "--redis"}, "--redis does not apply to --target grpc"},
      {TargetKind::kHttp, {"--url", "--policy", "--descriptor"}, "--descriptor is only for"},
      {TargetKind::kMemory, {"--descriptor"}, "--descriptor is only for --target grpc"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(target_kind_name(c.kind)) + ": " + testing::PrintToString(c.given));
    const Status status = check_target_flags(c.kind, c.given);
    if (c.error.empty()) {
      EXPECT_TRUE(status.ok()) << status.to_string();
      continue;
    }
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr(c.error));
  }
}

}  // namespace
}  // namespace sluice::bench
