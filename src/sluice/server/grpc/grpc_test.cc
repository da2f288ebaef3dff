// The gRPC front end end to end: an in-process GrpcServer on a free port, grpc++ clients built
// from the same protos, decisions on the memory store (manual clock) and on a real Redis.
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "envoy/service/ratelimit/v3/rls.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.pb.h"
#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/server/grpc/grpc_server.h"
#include "sluice/server/grpc/reflection.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice::grpc_server {
namespace {

namespace rls = envoy::service::ratelimit::v3;
using Code = rls::RateLimitResponse::Code;
using Health = grpc::health::v1::Health;
using HealthCheckResponse = grpc::health::v1::HealthCheckResponse;

// Slow refills (per day) so nothing refills during a test on Redis's real clock.
constexpr std::string_view kPolicies = R"(
name: grpc.per_user
apps: [web]
descriptors: {entries: [{key: user}]}
limits: [{algorithm: token_bucket, capacity: 3, refill: 1, period: 1d}]
---
name: grpc.vip
apps: [web]
descriptors: {entries: [{key: user, value: vip}]}
limits: [{algorithm: sliding_log, limit: 5, window: 1h}]
---
name: grpc.internal
apps: [web]
descriptors: {entries: [{key: user, value: internal}], unlimited: true}
---
name: grpc.checkout
apps: [web]
descriptors: {entries: [{key: route, value: checkout}, {key: user}]}
limits: [{algorithm: gcra, rate: 1, period: 1d, burst: 1}]
---
name: grpc.shadow
apps: [web]
mode: shadow
descriptors: {entries: [{key: shadow}]}
limits: [{algorithm: token_bucket, capacity: 1, refill: 1, period: 1d}]
---
name: grpc.closed
apps: [web]
on_store_failure: fail_closed
descriptors: {entries: [{key: closed}]}
limits: [{algorithm: token_bucket, capacity: 100, refill: 1, period: 1d}]
---
name: grpc.overridable
apps: [web]
descriptors: {entries: [{key: tenant}], allow_override: true}
limits: [{algorithm: token_bucket, capacity: 100, refill: 1, period: 1d}]
---
name: grpc.usage
apps: [web]
max_debt: 5
descriptors: {entries: [{key: usage}], charge: true}
limits: [{algorithm: token_bucket, capacity: 10, refill: 1, period: 1d}]
---
name: grpc.race
apps: [web]
descriptors: {entries: [{key: race}]}
limits: [{algorithm: token_bucket, capacity: 50, refill: 1, period: 1d}]
)";

std::vector<policy::Policy> test_policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

using Entries = std::vector<std::pair<std::string, std::string>>;

void add_descriptor(rls::RateLimitRequest& request, const Entries& entries,
                    std::optional<std::uint64_t> hits_addend = std::nullopt) {
  auto& descriptor = *request.add_descriptors();
  for (const auto& [key, value] : entries) {
    auto& entry = *descriptor.add_entries();
    entry.set_key(key);
    entry.set_value(value);
  }
  if (hits_addend) descriptor.mutable_hits_addend()->set_value(*hits_addend);
}

rls::RateLimitRequest request_of(std::string domain, const Entries& entries,
                                 std::uint32_t hits_addend = 0) {
  rls::RateLimitRequest request;
  request.set_domain(std::move(domain));
  request.set_hits_addend(hits_addend);
  add_descriptor(request, entries);
  return request;
}

std::string header(const rls::RateLimitResponse& response, std::string_view key) {
  for (const auto& h : response.response_headers_to_add()) {
    if (h.key() == key) return h.value();
  }
  return "(absent)";
}

enum class Backend { kMemory, kRedis };

class GrpcTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kRedis) {
      StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
      ASSERT_TRUE(server.ok()) << server.status().to_string();
      redis_server_ = std::move(*server);
      // A long command timeout: the decision's own deadline is what must answer a stall.
      StatusOr<std::unique_ptr<redis::Multiplexer>> client =
          redis::Multiplexer::create({.host = "127.0.0.1",
                                      .port = redis_server_->port(),
                                      .command_timeout = 10 * kMicrosPerSecond});
      ASSERT_TRUE(client.ok()) << client.status().to_string();
      redis_store_ = std::make_unique<store::RedisStore>(
          std::shared_ptr<redis::Multiplexer>(std::move(*client)));
    }
    store::Store& store = redis_store_ ? static_cast<store::Store&>(*redis_store_) : memory_;
    limiter_ = std::make_unique<service::Limiter>(
        store, &memory_,
        service::LimiterOptions{.store_timeout = kMicrosPerSecond, .policies = &lookup_});
    StatusOr<std::unique_ptr<GrpcServer>> server =
        GrpcServer::start({.rls = {.headers = wire::RlsHeaders::kXRateLimit}}, *limiter_);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = rls::RateLimitService::NewStub(channel_);
  }

  void TearDown() override {
    if (server_) server_->shutdown();
  }

  rls::RateLimitResponse call(const rls::RateLimitRequest& request,
                              grpc::StatusCode expected = grpc::StatusCode::OK) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    rls::RateLimitResponse response;
    const grpc::Status status = stub_->ShouldRateLimit(&context, request, &response);
    EXPECT_EQ(status.error_code(), expected) << status.error_message();
    return response;
  }

  // What a call of `charges` charge descriptors met while Redis was paused (every script
  // stalls): a server whose limiter has `options` (the test's Redis, policies and a 10 s store
  // timeout), observed once `overloaded` of the charges were refused, then after Redis woke.
  struct StalledCharges {
    std::size_t pending = 0;  // while Redis was paused
    std::uint64_t overloaded = 0;
    grpc::Status answer;
    std::size_t pending_after = 0;
  };
  StalledCharges charge_while_redis_is_paused(service::LimiterOptions options, int charges,
                                              std::uint64_t overloaded) {
    options.store_timeout = 10 * kMicrosPerSecond;
    options.policies = &lookup_;
    service::Limiter limiter(*redis_store_, &memory_, options);
    StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::start({}, limiter);
    StatusOr<std::unique_ptr<redis::Multiplexer>> pauser =
        redis::Multiplexer::create({.host = "127.0.0.1", .port = redis_server_->port()});
    if (!server.ok() || !pauser.ok() ||
        !(*pauser)->command({"CLIENT", "PAUSE", "10000", "WRITE"}).ok()) {
      ADD_FAILURE() << "no server or no paused Redis";
      return {};
    }
    auto stub = rls::RateLimitService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
    rls::RateLimitRequest request;
    request.set_domain("web");
    for (int i = 0; i < charges; ++i) add_descriptor(request, {{"usage", "u" + std::to_string(i)}});
    StalledCharges seen;
    std::thread caller([&] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      rls::RateLimitResponse response;
      seen.answer = stub->ShouldRateLimit(&context, request, &response);
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (limiter.stats().overloaded < overloaded && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    seen.pending = limiter.stats().pending;
    seen.overloaded = limiter.stats().overloaded;
    EXPECT_TRUE((*pauser)->command({"CLIENT", "UNPAUSE"}).ok());
    caller.join();
    seen.pending_after = limiter.stats().pending;
    (*server)->shutdown();
    return seen;
  }

  ManualClock clock_{1'700'000'000'000'000};
  store::MemoryStore memory_{clock_};
  std::unique_ptr<test::RedisServer> redis_server_;
  std::unique_ptr<store::RedisStore> redis_store_;
  service::StaticPolicyLookup lookup_{test_policies()};
  std::unique_ptr<service::Limiter> limiter_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rls::RateLimitService::Stub> stub_;
};

TEST_P(GrpcTest, OverLimitAfterTheLimitWithLimitRemainingAndReset) {
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const rls::RateLimitResponse response = call(request_of("web", {{"user", "alice"}}));
    EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OK);
    ASSERT_EQ(response.statuses_size(), 1);
    const auto& status = response.statuses(0);
    EXPECT_EQ(status.code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(status.current_limit().name(), "grpc.per_user");
    EXPECT_EQ(status.current_limit().requests_per_unit(), 3u);
    EXPECT_EQ(status.current_limit().unit(), rls::RateLimitResponse::RateLimit::DAY);
    EXPECT_EQ(status.limit_remaining(), static_cast<std::uint32_t>(2 - i));
    EXPECT_EQ(header(response, "x-ratelimit-remaining"), std::to_string(2 - i));
  }
  const rls::RateLimitResponse denied = call(request_of("web", {{"user", "alice"}}));
  EXPECT_EQ(denied.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(denied.statuses(0).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(denied.statuses(0).limit_remaining(), 0u);
  EXPECT_GT(denied.statuses(0).duration_until_reset().seconds(), 0);
  EXPECT_EQ(header(denied, "x-ratelimit-limit"), "3, 3;w=86400");
  // Each value of a key-only entry is its own subject.
  EXPECT_EQ(call(request_of("web", {{"user", "bob"}})).overall_code(), rls::RateLimitResponse::OK);
}

TEST_P(GrpcTest, HitsAddendFromTheRequestAndFromTheDescriptor) {
  EXPECT_EQ(call(request_of("web", {{"user", "carol"}}, 2)).statuses(0).limit_remaining(), 1u);
  rls::RateLimitRequest peek;
  peek.set_domain("web");
  add_descriptor(peek, {{"user", "carol"}}, 0);  // the descriptor's 0 is a peek, not 1
  const rls::RateLimitResponse peeked = call(peek);
  EXPECT_EQ(peeked.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(peeked.statuses(0).limit_remaining(), 1u);
  rls::RateLimitRequest two;
  two.set_domain("web");
  two.set_hits_addend(1);
  add_descriptor(two, {{"user", "carol"}}, 2);  // overrides the request's 1
  EXPECT_EQ(call(two).overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  const rls::RateLimitResponse last = call(request_of("web", {{"user", "carol"}}, 1));
  EXPECT_EQ(last.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(last.statuses(0).limit_remaining(), 0u);
}

TEST_P(GrpcTest, SeveralDescriptorsAnswerInOrderAndAnyOverIsOverall) {
  const auto three = [] {
    rls::RateLimitRequest request;
    request.set_domain("web");
    add_descriptor(request, {{"user", "dave"}});
    add_descriptor(request, {{"route", "checkout"}, {"user", "dave"}});
    add_descriptor(request, {{"unknown", "x"}});
    return request;
  }();
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const rls::RateLimitResponse response = call(three);
    EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OK);
    ASSERT_EQ(response.statuses_size(), 3);
    EXPECT_EQ(response.statuses(0).current_limit().name(), "grpc.per_user");
    EXPECT_EQ(response.statuses(1).current_limit().name(), "grpc.checkout");
    EXPECT_EQ(response.statuses(1).limit_remaining(), static_cast<std::uint32_t>(1 - i));
    EXPECT_EQ(response.statuses(2).code(), rls::RateLimitResponse::OK);
    EXPECT_FALSE(response.statuses(2).has_current_limit());
  }
  const rls::RateLimitResponse over = call(three);
  EXPECT_EQ(over.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(0).code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(over.statuses(0).limit_remaining(), 0u);
  EXPECT_EQ(over.statuses(1).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(over.statuses(2).code(), rls::RateLimitResponse::OK);
}

// One descriptor decided among undecided ones takes the server's path for a lone decision: its
// status still lands at its own index, and it alone sets the overall code.
TEST_P(GrpcTest, OneDecidedDescriptorAmongUnmatchedOnesKeepsItsPlace) {
  rls::RateLimitRequest request;
  request.set_domain("web");
  add_descriptor(request, {{"unknown", "x"}});
  add_descriptor(request, {{"route", "checkout"}, {"user", "frank"}});
  add_descriptor(request, {{"user", "internal"}});
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const rls::RateLimitResponse response = call(request);
    ASSERT_EQ(response.statuses_size(), 3);
    EXPECT_FALSE(response.statuses(0).has_current_limit());
    EXPECT_EQ(response.statuses(1).current_limit().name(), "grpc.checkout");
    EXPECT_FALSE(response.statuses(2).has_current_limit());
    const bool over = i == 2;  // grpc.checkout admits 2
    EXPECT_EQ(response.statuses(1).code(),
              over ? rls::RateLimitResponse::OVER_LIMIT : rls::RateLimitResponse::OK);
    EXPECT_EQ(response.overall_code(), response.statuses(1).code());
    EXPECT_EQ(response.statuses(0).code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(response.statuses(2).code(), rls::RateLimitResponse::OK);
  }
}

TEST_P(GrpcTest, UnmatchedDescriptorsAndUnlimitedNodesAreNeverLimited) {
  for (int i = 0; i < 8; ++i) {
    SCOPED_TRACE(i);
    for (const auto& [domain, entries] : std::vector<std::pair<std::string, Entries>>{
             {"other-domain", {{"user", "erin"}}},     // no tree for this domain
             {"web", {{"route", "checkout"}}},         // shallower than the limit
             {"web", {{"user", "erin"}, {"x", "y"}}},  // deeper than the tree
             {"web", {{"user", "internal"}}}}) {       // unlimited: true
      const rls::RateLimitResponse response = call(request_of(domain, entries));
      EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OK);
      EXPECT_FALSE(response.statuses(0).has_current_limit());
      EXPECT_EQ(header(response, "x-ratelimit-limit"), "(absent)");
    }
  }
  // A value match is more specific than the key-only sibling.
  EXPECT_EQ(call(request_of("web", {{"user", "vip"}})).statuses(0).current_limit().name(),
            "grpc.vip");
}

TEST_P(GrpcTest, ShadowModeAnswersOkAndCountsTheWouldBeDenials) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(call(request_of("web", {{"shadow", "s"}})).overall_code(),
              rls::RateLimitResponse::OK);
  }
  EXPECT_EQ(limiter_->stats().shadow_denied, 2u);
}

TEST_P(GrpcTest, LimitOverridesApplyOnlyWhereThePolicyAllowsThemAndCountApart) {
  const auto with_override = [](const Entries& entries, std::uint32_t requests, int unit) {
    rls::RateLimitRequest request = request_of("web", entries);
    auto& limit = *request.mutable_descriptors(0)->mutable_limit();
    limit.set_requests_per_unit(requests);
    limit.set_unit(static_cast<envoy::type::v3::RateLimitUnit>(unit));
    return request;
  };
  const rls::RateLimitRequest two_a_day = with_override({{"tenant", "t1"}}, 2, 4 /*DAY*/);
  for (int i = 0; i < 2; ++i) {
    const rls::RateLimitResponse response = call(two_a_day);
    EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OK);
    EXPECT_EQ(response.statuses(0).current_limit().requests_per_unit(), 2u);
    EXPECT_EQ(response.statuses(0).current_limit().unit(), rls::RateLimitResponse::RateLimit::DAY);
    EXPECT_EQ(response.statuses(0).limit_remaining(), static_cast<std::uint32_t>(1 - i));
  }
  EXPECT_EQ(call(two_a_day).overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  // The policy's own limit keeps its own count.
  const rls::RateLimitResponse own = call(request_of("web", {{"tenant", "t1"}}));
  EXPECT_EQ(own.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(own.statuses(0).current_limit().requests_per_unit(), 100u);
  EXPECT_EQ(own.statuses(0).limit_remaining(), 99u);
  // A policy without allow_override ignores the override.
  EXPECT_EQ(call(with_override({{"user", "frank"}}, 1000, 1))
                .statuses(0)
                .current_limit()
                .requests_per_unit(),
            3u);
  call(with_override({{"tenant", "t2"}}, 5, 0 /*UNKNOWN*/), grpc::StatusCode::INVALID_ARGUMENT);
  call(with_override({{"tenant", "t2"}}, 0, 1), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(GrpcTest, ChargeDescriptorsChargeTheCostAfterTheFactIntoDebtDownToMaxDebt) {
  // As Envoy sends them with apply_on_stream_done: hits_addend is the usage, already spent.
  const rls::RateLimitResponse first = call(request_of("web", {{"usage", "alice"}}, 8));
  EXPECT_EQ(first.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(first.statuses(0).limit_remaining(), 2u);
  // More than is left: charged anyway, into debt (remaining reports 0, never negative).
  const rls::RateLimitResponse debt = call(request_of("web", {{"usage", "alice"}}, 6));
  EXPECT_EQ(debt.overall_code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(debt.statuses(0).limit_remaining(), 0u);
  // The debt (-4) delays the subject's next request until the refill repays it.
  StatusOr<service::Decision> next =
      limiter_->block_on({.app = "web", .policy = "grpc.usage", .subject = "alice", .cost = 1})
          .decision;
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_FALSE(next->verdict.allowed);
  // Beyond max_debt (-4 - 2 < -5) the charge is refused, and nothing is charged.
  EXPECT_EQ(call(request_of("web", {{"usage", "alice"}}, 2)).overall_code(),
            rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(call(request_of("web", {{"usage", "alice"}}, 1)).overall_code(),
            rls::RateLimitResponse::OK);
  EXPECT_EQ(call(request_of("web", {{"usage", "alice"}}, 1)).overall_code(),
            rls::RateLimitResponse::OVER_LIMIT);  // -6 now: one more would pass max_debt
}

TEST_P(GrpcTest, MalformedRequestsAreInvalidArgument) {
  call(request_of("", {{"user", "x"}}), grpc::StatusCode::INVALID_ARGUMENT);
  rls::RateLimitRequest no_descriptors;
  no_descriptors.set_domain("web");
  call(no_descriptors, grpc::StatusCode::INVALID_ARGUMENT);
  rls::RateLimitRequest too_costly;
  too_costly.set_domain("web");
  add_descriptor(too_costly, {{"user", "x"}}, std::uint64_t{1} << 40);
  call(too_costly, grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_P(GrpcTest, HealthFollowsServing) {
  auto health = Health::NewStub(channel_);
  const auto check = [&](const std::string& service) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    const grpc::Status status = health->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.status();
  };
  const std::string rls_name = "envoy.service.ratelimit.v3.RateLimitService";
  EXPECT_EQ(check(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(check(rls_name), HealthCheckResponse::SERVING);
  server_->set_serving(false);
  EXPECT_EQ(check(""), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(check(rls_name), HealthCheckResponse::NOT_SERVING);
  server_->set_serving(true);
  EXPECT_EQ(check(rls_name), HealthCheckResponse::SERVING);
}

TEST_P(GrpcTest, ExactlyTheLimitIsAdmittedAcross200ConcurrentCalls) {
  constexpr int kCalls = 200;
  struct Call {
    grpc::ClientContext context;
    rls::RateLimitRequest request;
    rls::RateLimitResponse response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto c = std::make_unique<Call>();
    c->request = request_of("web", {{"race", "shared"}});
    c->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    calls.push_back(std::move(c));
  }
  for (auto& c : calls) {  // every call in flight before any is answered, where the server allows
    Call* raw = c.get();
    stub_->async()->ShouldRateLimit(&raw->context, &raw->request, &raw->response,
                                    [&, raw](grpc::Status status) {
                                      std::lock_guard lock(mutex);
                                      raw->status = std::move(status);
                                      if (++finished == kCalls) done.notify_one();
                                    });
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(done.wait_for(lock, std::chrono::seconds(30), [&] { return finished == kCalls; }));
  int ok = 0;
  int over = 0;
  for (const auto& c : calls) {
    ASSERT_TRUE(c->status.ok()) << c->status.error_message();
    (c->response.overall_code() == rls::RateLimitResponse::OK ? ok : over)++;
  }
  EXPECT_EQ(ok, 50);
  EXPECT_EQ(over, kCalls - 50);
}

// Redis paused for 3 s: each descriptor is answered by its policy's failure mode before the
// caller's deadline, and the call is an answer, not DEADLINE_EXCEEDED.
TEST_P(GrpcTest, StalledStoreIsAnsweredByTheFailureModeWithinTheDeadline) {
  if (GetParam() != Backend::kRedis) GTEST_SKIP() << "the memory store cannot stall";
  ASSERT_EQ(call(request_of("web", {{"closed", "warm"}})).overall_code(),
            rls::RateLimitResponse::OK);
  StatusOr<std::unique_ptr<redis::Multiplexer>> pauser =
      redis::Multiplexer::create({.host = "127.0.0.1", .port = redis_server_->port()});
  ASSERT_TRUE(pauser.ok());
  // CLIENT PAUSE answers its own caller first: once it has, every other client is stalled.
  ASSERT_TRUE((*pauser)->command({"CLIENT", "PAUSE", "3000", "ALL"}).ok());
  rls::RateLimitRequest request;
  request.set_domain("web");
  add_descriptor(request, {{"user", "stalled"}});    // fail_open
  add_descriptor(request, {{"closed", "stalled"}});  // fail_closed
  grpc::ClientContext context;
  const auto started = std::chrono::steady_clock::now();
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  rls::RateLimitResponse response;
  const grpc::Status status = stub_->ShouldRateLimit(&context, request, &response);
  const auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.statuses(0).code(), rls::RateLimitResponse::OK);
  EXPECT_EQ(response.statuses(1).code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_EQ(response.overall_code(), rls::RateLimitResponse::OVER_LIMIT);
  EXPECT_LT(elapsed, std::chrono::milliseconds(500));
  EXPECT_GE(limiter_->stats().degraded, 2u);
  (void)(*pauser)->command({"CLIENT", "UNPAUSE"});
}

// Issue 16 (overload): beyond max_pending decisions in flight a call is answered UNAVAILABLE at
// once, while the one in flight is answered when Redis wakes up.
TEST_P(GrpcTest, BeyondMaxPendingACallIsUnavailableAtOnce) {
  if (GetParam() != Backend::kRedis) GTEST_SKIP() << "the memory store answers in process";
  service::Limiter limiter(
      *redis_store_, &memory_,
      {.store_timeout = 10 * kMicrosPerSecond, .policies = &lookup_, .max_pending = 1});
  StatusOr<std::unique_ptr<GrpcServer>> server = GrpcServer::start({}, limiter);
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  auto stub = rls::RateLimitService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string((*server)->port()), grpc::InsecureChannelCredentials()));
  StatusOr<std::unique_ptr<redis::Multiplexer>> pauser =
      redis::Multiplexer::create({.host = "127.0.0.1", .port = redis_server_->port()});
  ASSERT_TRUE(pauser.ok());
  // WRITE mode stalls every script yet lets CLIENT UNPAUSE through.
  ASSERT_TRUE((*pauser)->command({"CLIENT", "PAUSE", "10000", "WRITE"}).ok());
  const auto ask = [&stub](std::string_view user) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    rls::RateLimitResponse response;
    return stub->ShouldRateLimit(&context, request_of("web", {{"user", std::string(user)}}),
                                 &response);
  };
  grpc::Status held;
  std::thread first([&] { held = ask("held"); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (limiter.stats().pending < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_EQ(limiter.stats().pending, 1u);
  const grpc::Status refused = ask("second");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(refused.error_message().find("overloaded"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(limiter.stats().overloaded, 1u);
  ASSERT_TRUE((*pauser)->command({"CLIENT", "UNPAUSE"}).ok());
  first.join();
  EXPECT_TRUE(held.ok()) << held.error_message();
  EXPECT_EQ(limiter.stats().pending, 0u);
  (*server)->shutdown();
}

// Issue 32, L5: one call carries at most max_descriptors (HTTP's batch cap, 1 000); above it the
// call is INVALID_ARGUMENT naming the field, before anything is decided.
TEST_P(GrpcTest, MoreDescriptorsThanTheCapAreInvalidArgumentNamingTheField) {
  rls::RateLimitRequest at_cap;
  at_cap.set_domain("web");
  for (int i = 0; i < 1000; ++i) add_descriptor(at_cap, {{"user", "cap" + std::to_string(i)}});
  EXPECT_EQ(call(at_cap).statuses_size(), 1000);
  rls::RateLimitRequest over = at_cap;
  add_descriptor(over, {{"user", "one-more"}});
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  rls::RateLimitResponse response;
  const grpc::Status status = stub_->ShouldRateLimit(&context, over, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("descriptors: at most 1000"), std::string::npos)
      << status.error_message();
  // Nothing of the refused call was counted.
  EXPECT_EQ(call(request_of("web", {{"user", "one-more"}})).statuses(0).limit_remaining(), 2u);
}

// Issue 32, L5: charge descriptors hold places among the limiter's pending decisions like any
// other, so a call of many charges cannot pass max_pending while the store is slow.
TEST_P(GrpcTest, ChargeDescriptorsCountAgainstThePendingBound) {
  if (GetParam() != Backend::kRedis) GTEST_SKIP() << "the memory store answers in process";
  const StalledCharges seen = charge_while_redis_is_paused({.max_pending = 10}, 11, 1);
  EXPECT_EQ(seen.pending, 10u);  // never more than the bound
  EXPECT_EQ(seen.overloaded, 1u);
  EXPECT_EQ(seen.answer.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(seen.answer.error_message().find("overloaded"), std::string::npos)
      << seen.answer.error_message();
  EXPECT_EQ(seen.pending_after, 0u);
}

// Issue 32, M6 on the gRPC port: a call's decisions and charges name their client (the peer
// address), so one client holds at most its share of the pending places, not the whole bound.
TEST_P(GrpcTest, OneClientsChargesHoldAtMostItsShareOfThePendingPlaces) {
  if (GetParam() != Backend::kRedis) GTEST_SKIP() << "the memory store answers in process";
  const StalledCharges seen =
      charge_while_redis_is_paused({.max_pending = 10, .max_pending_per_client = 4}, 6, 2);
  EXPECT_EQ(seen.pending, 4u);  // the client's share, not the bound of 10
  EXPECT_EQ(seen.overloaded, 2u);
  EXPECT_EQ(seen.answer.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(seen.answer.error_message().find("max_pending_per_client"), std::string::npos)
      << seen.answer.error_message();
  EXPECT_EQ(seen.pending_after, 0u);
}

TEST_P(GrpcTest, HealthWatchSendsTheStatusThenEachChange) {
  auto health = Health::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("envoy.service.ratelimit.v3.RateLimitService");
  std::unique_ptr<grpc::ClientReader<HealthCheckResponse>> reader =
      health->Watch(&context, request);
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  server_->set_serving(false);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  server_->set_serving(true);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  // Shutdown ends the stream: a last NOT_SERVING, then UNAVAILABLE.
  server_->shutdown();
  while (reader->Read(&response)) EXPECT_EQ(response.status(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

INSTANTIATE_TEST_SUITE_P(Stores, GrpcTest, ::testing::Values(Backend::kMemory, Backend::kRedis),
                         [](const ::testing::TestParamInfo<Backend>& param) {
                           return param.param == Backend::kMemory ? "Memory" : "Redis";
                         });

namespace reflection = grpc::reflection::v1alpha;

reflection::ServerReflectionResponse reflect(const reflection::ServerReflectionRequest& request) {
  StatusOr<std::string> answer =
      reflection_answer(request.SerializeAsString(), {"a.Service", "b.Service"});
  EXPECT_TRUE(answer.ok()) << answer.status().to_string();
  reflection::ServerReflectionResponse response;
  EXPECT_TRUE(response.ParseFromString(answer.ok() ? *answer : ""));
  return response;
}

std::vector<std::string> file_names(const reflection::ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    EXPECT_TRUE(file.ParseFromString(bytes));
    names.push_back(file.name());
  }
  return names;
}

TEST(ReflectionTest, ListsTheServicesAndDescribesSymbolsWithEveryDependency) {
  reflection::ServerReflectionRequest list;
  list.set_list_services("");
  const reflection::ServerReflectionResponse listed = reflect(list);
  ASSERT_EQ(listed.list_services_response().service_size(), 2);
  EXPECT_EQ(listed.list_services_response().service(1).name(), "b.Service");

  reflection::ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("envoy.service.ratelimit.v3.RateLimitService");
  const std::vector<std::string> files = file_names(reflect(symbol));
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files.front(), "envoy/service/ratelimit/v3/rls.proto");
  for (const char* dependency :
       {"envoy/extensions/common/ratelimit/v3/ratelimit.proto", "envoy/config/core/v3/base.proto",
        "envoy/type/v3/ratelimit_unit.proto", "google/protobuf/duration.proto",
        "google/protobuf/wrappers.proto"}) {
    EXPECT_NE(std::find(files.begin(), files.end(), dependency), files.end()) << dependency;
  }

  reflection::ServerReflectionRequest by_name;
  by_name.set_file_by_filename("grpc/health/v1/health.proto");
  EXPECT_EQ(file_names(reflect(by_name)), std::vector<std::string>{"grpc/health/v1/health.proto"});

  reflection::ServerReflectionRequest unknown;
  unknown.set_file_containing_symbol("no.such.Symbol");
  const reflection::ServerReflectionResponse missing = reflect(unknown);
  EXPECT_EQ(missing.error_response().error_code(), static_cast<int>(StatusCode::kNotFound));
  EXPECT_EQ(missing.original_request().file_containing_symbol(), "no.such.Symbol");
}

}  // namespace
}  // namespace sluice::grpc_server
