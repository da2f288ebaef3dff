// Integration tests of RedisStore's token-lease operations (take, give back) against a real
// redis-server: a take never takes more than every limit holds, a refused take takes nothing, a
// give-back never refunds a bucket above its capacity, and a window limit is refunded only while
// its window is the one the units were taken in (else the refund would add budget to a new
// window). Window tests pin the scripts' clock (pinned_clock_for_tests); the rest run on Redis's.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/core/clock.h"
#include "sluice/core/rendezvous.h"
#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/redis_store_test_fixture.h"
#include "testing/redis_cluster.h"

namespace sluice::store {
namespace {

using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::SlidingWindow;
using algorithm::TokenBucket;

constexpr Micros kHour = 3600 * kMicrosPerSecond;
constexpr Micros kEpoch = 1'700'000'000'000'000;  // a realistic µs timestamp, window-aligned

class RedisStoreTokenBatchTest : public RedisServerTest {
 protected:
  void SetUp() override {
    RedisServerTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<RedisStore>(client_);
    pinned_ =
        std::make_unique<RedisStore>(client_, RedisStoreOptions{.pinned_clock_for_tests = &clock_});
  }

  static StatusOr<TokenTake> take(Store& store, const SubjectRef& ref, std::int64_t least,
                                  std::int64_t most) {
    Rendezvous<StatusOr<TokenTake>> answer;
    store.take_tokens(ref, least, most,
                      [&](StatusOr<TokenTake> taken) { answer.deliver(std::move(taken)); });
    return answer.wait();
  }
  static StatusOr<Decision> give(Store& store, const SubjectRef& ref, std::int64_t units,
                                 Micros taken_at) {
    Rendezvous<StatusOr<Decision>> answer;
    store.give_back_tokens(ref, units, taken_at,
                           [&](StatusOr<Decision> given) { answer.deliver(std::move(given)); });
    return answer.wait();
  }

  ManualClock clock_{kEpoch};
  std::unique_ptr<RedisStore> store_;
  std::unique_ptr<RedisStore> pinned_;
};

TEST_F(RedisStoreTokenBatchTest, TakesUpToMostAndNeverMoreThanTheBucketHolds) {
  const Limit bucket[] = {TokenBucket{.capacity = 10, .refill = 1, .period = kHour}};
  const SubjectRef ref{.policy = "lease.take", .limits = bucket, .subject = "hot"};
  struct Step {
    std::int64_t least, most, taken, balance_after;
    bool allowed;
  };
  const Step steps[] = {
      {1, 4, 4, 6, true}, {1, 4, 4, 2, true}, {1, 4, 2, 0, true}, {1, 4, 0, 0, false}};
  for (std::size_t i = 0; i < std::size(steps); ++i) {
    SCOPED_TRACE("take " + std::to_string(i));
    StatusOr<TokenTake> taken = take(*store_, ref, steps[i].least, steps[i].most);
    ASSERT_TRUE(taken.ok()) << taken.status().to_string();
    EXPECT_EQ(taken->taken, steps[i].taken);
    EXPECT_EQ(taken->decision.verdict.allowed, steps[i].allowed);
    EXPECT_GT(taken->taken_at, kEpoch);  // Redis's clock, in µs
    EXPECT_EQ(balance(*store_, ref), steps[i].balance_after);
  }
  StatusOr<TokenTake> refused = take(*store_, ref, 1, 4);
  ASSERT_TRUE(refused.ok());
  ASSERT_TRUE(refused->decision.verdict.retry_after.has_value());
  EXPECT_GT(*refused->decision.verdict.retry_after, 0);
}

TEST_F(RedisStoreTokenBatchTest, TakeBelowLeastRefusesAndTakesNothing) {
  const Limit bucket[] = {TokenBucket{.capacity = 10, .refill = 1, .period = kHour}};
  const SubjectRef ref{.policy = "lease.least", .limits = bucket, .subject = "hot"};
  ASSERT_EQ(take(*store_, ref, 7, 7)->taken, 7);
  StatusOr<TokenTake> refused = take(*store_, ref, 4, 8);  // 3 left < least 4
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->taken, 0);
  EXPECT_FALSE(refused->decision.verdict.allowed);
  EXPECT_EQ(balance(*store_, ref), 3);
}

TEST_F(RedisStoreTokenBatchTest, TakeIsBoundedByTheTightestLimit) {
  const Limit limits[] = {TokenBucket{.capacity = 100, .refill = 1, .period = kHour},
                          Gcra{.rate = 1, .period = kHour, .burst = 4},
                          SlidingWindow{.limit = 50, .window = kHour}};
  const SubjectRef ref{.policy = "lease.tightest", .limits = limits, .subject = "hot"};
  StatusOr<TokenTake> taken = take(*store_, ref, 1, 20);
  ASSERT_TRUE(taken.ok()) << taken.status().to_string();
  EXPECT_EQ(taken->taken, 5);  // GCRA's burst + 1
  EXPECT_EQ(take(*store_, ref, 1, 20)->taken, 0);
}

TEST_F(RedisStoreTokenBatchTest, GiveBackNeverFillsABucketBeyondCapacity) {
  const Limit bucket[] = {TokenBucket{.capacity = 10, .refill = 1, .period = kHour}};
  const SubjectRef ref{.policy = "lease.give", .limits = bucket, .subject = "hot"};
  StatusOr<TokenTake> taken = take(*store_, ref, 1, 6);
  ASSERT_TRUE(taken.ok());
  ASSERT_TRUE(give(*store_, ref, 4, taken->taken_at).ok());
  EXPECT_EQ(balance(*store_, ref), 8);
  ASSERT_TRUE(give(*store_, ref, 5, taken->taken_at).ok());  // 2 were spent: 3 too many
  EXPECT_EQ(balance(*store_, ref), 10);
}

TEST_F(RedisStoreTokenBatchTest, WindowGiveBackOnlyInTheWindowTheUnitsCameFrom) {
  const Limit fixed[] = {FixedWindow{.limit = 10, .window = kMicrosPerSecond}};
  const Limit sliding[] = {SlidingWindow{.limit = 10, .window = kMicrosPerSecond}};
  for (const auto& [name, limits] : {std::pair{"fixed", std::span<const Limit>(fixed)},
                                     std::pair{"sliding", std::span<const Limit>(sliding)}}) {
    SCOPED_TRACE(name);
    const SubjectRef ref{.policy = std::string_view(name), .limits = limits, .subject = "hot"};
    clock_.set(kEpoch);
    StatusOr<TokenTake> first = take(*pinned_, ref, 1, 6);
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    EXPECT_EQ(first->taken_at, kEpoch);
    clock_.set(kEpoch + kMicrosPerSecond - 1);  // same window, its last µs: refunded
    ASSERT_TRUE(give(*pinned_, ref, 2, first->taken_at).ok());
    EXPECT_EQ(balance(*pinned_, ref), 6);
    clock_.set(kEpoch + 2 * kMicrosPerSecond);  // a later window, clear of the sliding weight
    ASSERT_EQ(take(*pinned_, ref, 1, 5)->taken, 5);
    ASSERT_TRUE(give(*pinned_, ref, 4, first->taken_at).ok());  // from an old window: ignored
    EXPECT_EQ(balance(*pinned_, ref), 5);
  }
}

TEST_F(RedisStoreTokenBatchTest, RefusesAlgorithmsThatCannotBeLeased) {
  const Limit leaky[] = {LeakyBucket{.rate = 1, .period = kMicrosPerSecond, .max_delay = 0}};
  const SubjectRef ref{.policy = "lease.leaky", .limits = leaky, .subject = "hot"};
  StatusOr<TokenTake> taken = take(*store_, ref, 1, 5);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(taken.status().message().find("limits[0]: leaky_bucket cannot be leased"),
            std::string::npos)
      << taken.status().message();
  EXPECT_EQ(give(*store_, ref, 1, 0).status().code(), StatusCode::kInvalidArgument);
}

// On a Redis Cluster the take and the give-back are routed by the subject's hash slot like every
// call of the subject (its keys share one "{policy:subject}" tag), and the heartbeat's one key
// by its own tag: subjects on every master lease and give back as on one server.
TEST(RedisStoreTokenBatchClusterTest, TakesAndGivesBackOnEveryMaster) {
  StatusOr<std::unique_ptr<test::RedisCluster>> cluster =
      test::RedisCluster::start({.masters = 3, .replicas_per_master = 0});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  StatusOr<std::unique_ptr<RedisStore>> store = RedisStore::open((*cluster)->url());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  const Limit bucket[] = {TokenBucket{.capacity = 10, .refill = 1, .period = kHour}};
  for (int i = 0; i < 12; ++i) {  // 12 subjects: every master owns some with near certainty
    const std::string subject = "hot-" + std::to_string(i);
    SCOPED_TRACE(subject);
    const SubjectRef ref{.policy = "lease.cluster", .limits = bucket, .subject = subject};
    Rendezvous<StatusOr<TokenTake>> took;
    (*store)->take_tokens(ref, 1, 4, [&](StatusOr<TokenTake> t) { took.deliver(t); });
    StatusOr<TokenTake> taken = took.wait();
    ASSERT_TRUE(taken.ok()) << taken.status().to_string();
    EXPECT_EQ(taken->taken, 4);
    Rendezvous<StatusOr<Decision>> gave;
    (*store)->give_back_tokens(ref, 3, taken->taken_at,
                               [&](StatusOr<Decision> d) { gave.deliver(d); });
    ASSERT_TRUE(gave.wait().ok());
    StatusOr<Decision> peek = store::apply_quota_now(*(*store), ref, {.cost = 0});
    ASSERT_TRUE(peek.ok()) << peek.status().to_string();
    EXPECT_EQ(peek->verdict.balance, 9);
  }
}

}  // namespace
}  // namespace sluice::store
