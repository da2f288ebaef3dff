// Integration tests of RedisStore's quota operations (charge, refund) against a real redis-server
// on Redis's own clock: concurrent charges total exactly, concurrent refunds repay a debt exactly
// once and never beyond capacity, and every key a quota operation writes expires. The
// per-algorithm arithmetic is pinned by the conformance traces (tests/conformance/traces/quota_*).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/clock.h"
#include "sluice/core/key.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/redis_server.h"

namespace sluice::store {
namespace {

using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::RefillMode;
using algorithm::SlidingLog;
using algorithm::SlidingWindow;
using algorithm::TokenBucket;
using test::RedisServer;

constexpr Micros kHour = 3600 * kMicrosPerSecond;

class RedisStoreQuotaTest : public testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::start();
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    StatusOr<std::unique_ptr<redis::Client>> client =
        redis::Client::create({.port = server_->port()});
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    client_ = std::shared_ptr<redis::Client>(std::move(*client));
    store_ = std::make_unique<RedisStore>(client_);
  }

  // Runs `operations` quota operations at once (submitted from `threads` threads without waiting
  // for answers) and returns their decisions.
  std::vector<StatusOr<Decision>> run_concurrently(const SubjectRef& ref,
                                                   const std::vector<QuotaRequest>& operations,
                                                   int threads) {
    std::vector<StatusOr<Decision>> results(operations.size(), Status(StatusCode::kUnknown, ""));
    std::mutex mutex;
    std::condition_variable all_done;
    std::size_t done = 0;
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t) {
      senders.emplace_back([&, t] {
        for (std::size_t i = t; i < operations.size(); i += threads) {
          store_->apply_quota_async(ref, operations[i], [&, i](StatusOr<Decision> decision) {
            std::lock_guard lock(mutex);
            results[i] = std::move(decision);
            if (++done == operations.size()) all_done.notify_one();
          });
        }
      });
    }
    for (std::thread& sender : senders) sender.join();
    std::unique_lock lock(mutex);
    EXPECT_TRUE(all_done.wait_for(lock, std::chrono::seconds(30),
                                  [&] { return done == operations.size(); }));
    return results;
  }

  std::int64_t balance(const SubjectRef& ref) {
    StatusOr<Decision> peek = store_->apply_quota(ref, {.cost = 0});
    EXPECT_TRUE(peek.ok()) << peek.status().to_string();
    return peek.ok() ? peek->verdict.balance.value_or(-999'999) : -999'999;
  }

  std::unique_ptr<RedisServer> server_;
  std::shared_ptr<redis::Client> client_;
  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisStoreQuotaTest, TwoHundredConcurrentChargesTotalExactly) {
  // 1 token per hour: the refill during the test is far below one token.
  const Limit bucket[] = {TokenBucket{.capacity = 1'000, .refill = 1, .period = kHour}};
  const SubjectRef ref{.policy = "quota.race", .limits = bucket, .subject = "tenant"};
  // 200 × 10 = 2 000 = capacity + max_debt: every charge fits, the last one exactly.
  const std::vector<QuotaRequest> charges(200, {.cost = 10, .max_debt = 1'000});
  int charged = 0;
  for (const StatusOr<Decision>& decision : run_concurrently(ref, charges, 8)) {
    ASSERT_TRUE(decision.ok()) << decision.status().to_string();
    charged += decision->verdict.allowed ? 1 : 0;
  }
  EXPECT_EQ(charged, 200);
  EXPECT_EQ(balance(ref), -1'000);
  StatusOr<Decision> over = store_->apply_quota(ref, {.cost = 1, .max_debt = 1'000});
  ASSERT_TRUE(over.ok());
  EXPECT_FALSE(over->verdict.allowed) << "the debt bound held under the race";
  EXPECT_EQ(over->verdict.balance, -1'000);

  // One more than fits: exactly one of 201 concurrent charges is refused, on a sliding log.
  const Limit log[] = {SlidingLog{.limit = 150, .window = kHour}};
  const SubjectRef log_ref{.policy = "quota.race.log", .limits = log, .subject = "tenant"};
  const std::vector<QuotaRequest> log_charges(201, {.cost = 1, .max_debt = 50});
  int refused = 0;
  for (const StatusOr<Decision>& decision : run_concurrently(log_ref, log_charges, 8)) {
    ASSERT_TRUE(decision.ok()) << decision.status().to_string();
    refused += decision->verdict.allowed ? 0 : 1;
  }
  EXPECT_EQ(refused, 1);
  StatusOr<redis::Reply> entries =
      client_->command({"ZCARD", redis_limit_key(log_ref.policy, log_ref.subject, 0)});
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(entries->as_integer(), 200);
  EXPECT_EQ(balance(log_ref), -50);
}

TEST_F(RedisStoreQuotaTest, ConcurrentChargesAndRefundsApplyEachExactlyOnce) {
  const Limit limits[] = {TokenBucket{.capacity = 100, .refill = 1, .period = kHour},
                          FixedWindow{.limit = 100, .window = 30 * 24 * kHour},
                          SlidingWindow{.limit = 100, .window = 30 * 24 * kHour}};
  const SubjectRef ref{.policy = "quota.mixed", .limits = limits, .subject = "tenant"};
  ASSERT_TRUE(store_->apply_quota(ref, {.cost = 500, .max_debt = 1'000})->verdict.allowed);
  ASSERT_EQ(balance(ref), -400);
  // From -400: 100 charges of 2 and 100 refunds of 3 in any order stay within [-600, -100], so
  // neither the debt bound nor the capacity cap applies: each must count exactly once.
  std::vector<QuotaRequest> operations;
  for (int i = 0; i < 100; ++i) {
    operations.push_back({.operation = QuotaOperation::kCharge, .cost = 2, .max_debt = 1'000});
    operations.push_back({.operation = QuotaOperation::kRefund, .cost = 3});
  }
  for (const StatusOr<Decision>& decision : run_concurrently(ref, operations, 8)) {
    ASSERT_TRUE(decision.ok()) << decision.status().to_string();
    EXPECT_TRUE(decision->verdict.allowed);
  }
  EXPECT_EQ(balance(ref), -300);
}

TEST_F(RedisStoreQuotaTest, ADebtIsNeverRepaidTwice) {
  const Limit bucket[] = {TokenBucket{.capacity = 100, .refill = 1, .period = kHour}};
  const SubjectRef ref{.policy = "quota.repay", .limits = bucket, .subject = "tenant"};
  ASSERT_TRUE(store_->apply_quota(ref, {.cost = 150, .max_debt = 50})->verdict.allowed);
  ASSERT_EQ(balance(ref), -50);
  // Two parties each try to repay the whole debt and more: 2 × 60 refunds of 1 from -50. The
  // balance reaches 70 (not 100 from a debt counted as repaid by both, not above capacity).
  const std::vector<QuotaRequest> refunds(120, {.operation = QuotaOperation::kRefund, .cost = 1});
  for (const StatusOr<Decision>& decision : run_concurrently(ref, refunds, 2)) {
    ASSERT_TRUE(decision.ok()) << decision.status().to_string();
    EXPECT_LE(*decision->verdict.balance, 100);
  }
  EXPECT_EQ(balance(ref), 70);
  const std::vector<QuotaRequest> more(60, {.operation = QuotaOperation::kRefund, .cost = 1});
  run_concurrently(ref, more, 4);
  EXPECT_EQ(balance(ref), 100) << "capped at capacity";
}

TEST_F(RedisStoreQuotaTest, EveryKeyAQuotaOperationWritesExpires) {
  const Limit limits[] = {
      TokenBucket{.capacity = 10, .refill = 1, .period = kMicrosPerSecond},
      TokenBucket{.capacity = 10,
                  .refill = 1,
                  .period = kMicrosPerSecond,
                  .refill_mode = RefillMode::kInterval},
      Gcra{.rate = 1, .period = kMicrosPerSecond, .burst = 9},
      LeakyBucket{.rate = 1, .period = kMicrosPerSecond, .max_delay = 10 * kMicrosPerSecond},
      FixedWindow{.limit = 10, .window = kHour},
      SlidingWindow{.limit = 10, .window = kHour},
      SlidingLog{.limit = 10, .window = kHour}};
  const SubjectRef ref{.policy = "quota.ttl", .limits = limits, .subject = "tenant"};
  ASSERT_TRUE(store_->apply_quota(ref, {.cost = 12, .max_debt = 5})->verdict.allowed);
  for (std::size_t i = 0; i < std::size(limits); ++i) {
    SCOPED_TRACE("limits[" + std::to_string(i) + "]");
    StatusOr<redis::Reply> ttl =
        client_->command({"PTTL", redis_limit_key(ref.policy, ref.subject, i)});
    ASSERT_TRUE(ttl.ok());
    EXPECT_GT(ttl->as_integer(), 0) << "-1: no TTL, -2: not written";
  }
  // A refund back to unused leaves no key without a TTL (deleted, or expiring).
  ASSERT_TRUE(store_->apply_quota(ref, {.operation = QuotaOperation::kRefund, .cost = 100}).ok());
  StatusOr<redis::Reply> keys = client_->command({"KEYS", "*"});
  ASSERT_TRUE(keys.ok());
  for (const redis::Reply& key : keys->elements()) {
    StatusOr<redis::Reply> ttl = client_->command({"PTTL", key.as_string()});
    ASSERT_TRUE(ttl.ok());
    EXPECT_GT(ttl->as_integer(), 0) << key.as_string();
  }
}

TEST_F(RedisStoreQuotaTest, RefusesConcurrencyLimitsAndBadInputWithoutCallingRedis) {
  const Limit limits[] = {algorithm::Concurrency{.limit = 1, .lease_ttl = kMicrosPerSecond}};
  const SubjectRef ref{.policy = "quota.leases", .limits = limits, .subject = "tenant"};
  EXPECT_EQ(store_->apply_quota(ref, {.cost = 1}).status().code(), StatusCode::kFailedPrecondition);
  const Limit window[] = {FixedWindow{.limit = 1, .window = kHour}};
  const SubjectRef ok_ref{.policy = "quota.input", .limits = window, .subject = "tenant"};
  EXPECT_EQ(store_->apply_quota(ok_ref, {.cost = -1}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->apply_quota(ok_ref, {.cost = 1, .max_debt = -1}).status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<redis::Reply> size = client_->command({"DBSIZE"});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->as_integer(), 0);
}

// ---- differential: quota operations in Lua (Redis) vs C++ (memory), time pinned ----

using Rng = std::mt19937_64;

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

Micros random_period(Rng& rng) {
  static constexpr Micros kChoices[] = {1,         7,          1'000,      999'983,      1'000'000,
                                        1'000'003, 10'000'000, 60'000'000, 3'600'000'000};
  return kChoices[uniform(rng, 0, std::size(kChoices) - 1)];
}

Limit random_chargeable_limit(Rng& rng) {
  const std::int64_t size = uniform(rng, 1, 0 == uniform(rng, 0, 3) ? 200 : 12);
  switch (uniform(rng, 0, 6)) {
    case 0:
    case 1: {
      TokenBucket p{
          .capacity = size,
          .refill = uniform(rng, 1, 7),
          .period = random_period(rng),
          .refill_mode = uniform(rng, 0, 1) == 0 ? RefillMode::kSmooth : RefillMode::kInterval};
      if (uniform(rng, 0, 2) == 0) p.initial = uniform(rng, 0, p.capacity);
      return p;
    }
    case 2:
      return Gcra{.rate = uniform(rng, 1, 7), .period = random_period(rng), .burst = size - 1};
    case 3: {
      const Micros period = random_period(rng);
      return LeakyBucket{
          .rate = uniform(rng, 1, 7), .period = period, .max_delay = uniform(rng, 0, 3 * period)};
    }
    case 4:
      return FixedWindow{.limit = size, .window = random_period(rng)};
    case 5:
      return SlidingWindow{.limit = size, .window = random_period(rng)};
    default:
      return SlidingLog{.limit = size, .window = random_period(rng)};
  }
}

std::string show(const Decision& d) {
  const algorithm::Verdict& v = d.verdict;
  std::ostringstream out;
  out << "{allowed=" << v.allowed << " limit=" << v.limit << " remaining=" << v.remaining
      << " retry=" << (v.retry_after ? std::to_string(*v.retry_after) : "-")
      << " reset=" << v.reset_after << " delay=" << (v.delay ? std::to_string(*v.delay) : "-")
      << " index=" << d.limit_index << " balance=" << (v.balance ? std::to_string(*v.balance) : "-")
      << "}";
  return out.str();
}

// Random sequences of acquires, charges, refunds and balance peeks over random policies of one to
// three chargeable limits, on both stores at the same pinned instants (time only moves forward:
// Redis's own TTLs are taken off with PERSIST, so only the scripts' logic decides what expired).
TEST_F(RedisStoreQuotaTest, LuaQuotaOperationsDecideExactlyAsTheAlgorithms) {
  ManualClock clock(1'700'000'000'000'000);
  RedisStore pinned(client_, {.max_batch = 1, .pinned_clock_for_tests = &clock});
  int compared = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    Rng rng(seed);
    std::vector<Limit> limits;
    const std::int64_t count = uniform(rng, 1, 3);
    for (std::int64_t i = 0; i < count; ++i) limits.push_back(random_chargeable_limit(rng));
    const std::int64_t max_debt = uniform(rng, 0, 3) == 0 ? 0 : uniform(rng, 1, 30);
    bool valid = algorithm::validate_max_debt(max_debt, limits).empty();
    for (const Limit& limit : limits) valid = valid && algorithm::validate_limit(limit, "").empty();
    if (!valid) continue;
    MemoryStore memory(clock);
    const std::string policy = "quota.diff." + std::to_string(seed);
    const SubjectRef ref{.policy = policy, .limits = limits, .subject = "s"};
    std::vector<std::string> log;
    for (int step = 0; step < 40; ++step) {
      Micros longest = 1;
      for (const Limit& limit : limits) {
        std::visit(
            [&](const auto& p) {
              if constexpr (requires { p.period; }) longest = std::max(longest, p.period);
              if constexpr (requires { p.window; }) longest = std::max(longest, p.window);
            },
            limit);
      }
      const std::int64_t gap_kind = uniform(rng, 0, 9);
      clock.advance(gap_kind < 2 ? 0 : gap_kind < 8 ? uniform(rng, 1, longest) : 3 * longest);
      const std::int64_t op = uniform(rng, 0, 9);
      const std::int64_t cost =
          uniform(rng, 0, 4) == 0 ? uniform(rng, 0, 300) : uniform(rng, 0, 15);
      StatusOr<Decision> in_memory = Status(StatusCode::kUnknown, "");
      StatusOr<Decision> in_redis = Status(StatusCode::kUnknown, "");
      std::string what;
      if (op < 3) {
        what = "acquire " + std::to_string(cost);
        in_memory = memory.acquire(ref, cost);
        in_redis = pinned.acquire(ref, cost);
      } else {
        const QuotaRequest request{
            .operation = op < 7 ? QuotaOperation::kCharge : QuotaOperation::kRefund,
            .cost = op == 9 ? 0 : cost,
            .max_debt = max_debt};
        what = (op < 7 ? "charge " : "refund ") + std::to_string(request.cost);
        in_memory = memory.apply_quota(ref, request);
        in_redis = pinned.apply_quota(ref, request);
      }
      ASSERT_TRUE(in_memory.ok()) << in_memory.status().to_string();
      ASSERT_TRUE(in_redis.ok()) << in_redis.status().to_string();
      log.push_back("t+" + std::to_string(clock.now() - 1'700'000'000'000'000) + " " + what + ": " +
                    show(*in_memory));
      ++compared;
      if (in_memory->verdict != in_redis->verdict ||
          in_memory->limit_index != in_redis->limit_index) {
        std::string history;
        for (const std::string& line : log) history += "  " + line + "\n";
        FAIL() << "seed " << seed << ", max_debt " << max_debt << ", " << limits.size()
               << " limits: redis " << show(*in_redis) << "\n"
               << history;
      }
      for (std::size_t i = 0; i < limits.size(); ++i) {
        ASSERT_TRUE(client_->command({"PERSIST", redis_limit_key(policy, "s", i)}).ok());
      }
    }
  }
  EXPECT_GT(compared, 3'000) << "most random policies were valid";
}

}  // namespace
}  // namespace sluice::store
