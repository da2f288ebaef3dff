// Integration tests of calendar fixed windows in the Redis store: Redis's clock decides which
// period counts, whatever the client's clock says within a period either way (the client only
// sends the bounds of its period and of the next), with Redis pinned at 23:59:59.999999 local
// time; a client whose period and the next have both ended by Redis's clock is denied rather than
// counted in a wrong window; and the keys expire at the period's end.
// Time is injected: Redis's through the test-only pinned scripts, the client's separately.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sluice/core/clock.h"
#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/redis_store_test_fixture.h"

namespace sluice::store {
namespace {

using algorithm::Calendar;
using algorithm::CalendarPeriod;
using algorithm::FixedWindow;
using algorithm::Limit;

constexpr Micros kHour = 3600 * kMicrosPerSecond;
// 2026-03-28 23:00:00 UTC: midnight of 2026-03-29 in Europe/Berlin (CET, +1), the 23-hour day.
constexpr Micros kBerlinMidnight = 1'774'738'800'000'000;
constexpr Micros kLastMicrosecond = kBerlinMidnight - 1;  // 23:59:59.999999 local

const Limit kTwoPerBerlinDay[] = {FixedWindow{
    .limit = 2,
    .window = algorithm::longest_period(CalendarPeriod::kDay),
    .calendar = Calendar{.period = CalendarPeriod::kDay, .time_zone = "Europe/Berlin"}}};

class RedisStoreCalendarTest : public RedisServerTest {
 protected:
  void SetUp() override {
    RedisServerTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<RedisStore>(
        client_,
        RedisStoreOptions{.pinned_clock_for_tests = &redis_time_, .calendar_clock = &client_time_});
  }

  SubjectRef ref(std::string_view subject) const {
    return {.policy = "calendar.test", .limits = kTwoPerBerlinDay, .subject = subject};
  }

  ManualClock redis_time_{kLastMicrosecond};
  ManualClock client_time_{kLastMicrosecond};
  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisStoreCalendarTest, RedissClockPicksThePeriodWhateverTheClientsClockSays) {
  struct Skew {
    const char* name;
    Micros client_minus_redis;
  };
  for (const Skew skew :
       {Skew{"in step", 0}, Skew{"a second ahead, past midnight", kMicrosPerSecond},
        Skew{"ten hours ahead", 10 * kHour}, Skew{"an hour behind", -kHour},
        Skew{"22 hours behind", -22 * kHour}}) {
    SCOPED_TRACE(skew.name);
    const std::string subject = skew.name;
    // Filled an hour before midnight. (Redis counts a key's TTL on its real clock: a state written
    // 1 µs before its window ends lives 1 ms, too short to read back in a pinned-time test.)
    redis_time_.set(kBerlinMidnight - kHour);
    client_time_.set(kBerlinMidnight - kHour + skew.client_minus_redis);
    const StatusOr<Decision> both = store::acquire_now(*store_, ref(subject), 2);
    ASSERT_TRUE(both.ok()) << both.status().to_string();
    EXPECT_TRUE(both->verdict.allowed);
    EXPECT_EQ(both->verdict.reset_after, kHour) << "the window ends at Redis's local midnight";
    // Redis at 23:59:59.999999 local: still that window, whatever the client's clock says.
    redis_time_.set(kLastMicrosecond);
    client_time_.set(kLastMicrosecond + skew.client_minus_redis);
    const StatusOr<Decision> third = store::acquire_now(*store_, ref(subject), 1);
    ASSERT_TRUE(third.ok());
    EXPECT_FALSE(third->verdict.allowed);
    EXPECT_EQ(third->verdict.retry_after, 1);
    EXPECT_EQ(third->verdict.reset_after, 1);
    const StatusOr<Decision> last = store::acquire_now(*store_, ref(subject + " fresh"), 2);
    ASSERT_TRUE(last.ok());
    EXPECT_TRUE(last->verdict.allowed);
    EXPECT_EQ(last->verdict.reset_after, 1);
    // One microsecond later by Redis's clock: the 23-hour day of 2026-03-29, a fresh window.
    redis_time_.set(kBerlinMidnight);
    client_time_.set(kBerlinMidnight + skew.client_minus_redis);
    const StatusOr<Decision> next_day = store::acquire_now(*store_, ref(subject), 1);
    ASSERT_TRUE(next_day.ok());
    EXPECT_TRUE(next_day->verdict.allowed);
    EXPECT_EQ(next_day->verdict.remaining, 1);
    EXPECT_EQ(next_day->verdict.reset_after, 23 * kHour);
  }
}

TEST_F(RedisStoreCalendarTest, AClientMoreThanAPeriodBehindIsDeniedNotMiscounted) {
  client_time_.set(kLastMicrosecond - 48 * kHour);  // its period and the next end before Redis's
  const StatusOr<Decision> decision = store::acquire_now(*store_, ref("late"), 1);
  ASSERT_TRUE(decision.ok());
  EXPECT_FALSE(decision->verdict.allowed);
  EXPECT_FALSE(decision->verdict.retry_after);
  StatusOr<redis::Reply> exists = client_->command({"EXISTS", "sluice:{calendar.test:late}:0"});
  ASSERT_TRUE(exists.ok());
  EXPECT_EQ(exists->as_integer(), 0) << "nothing written";
}

TEST_F(RedisStoreCalendarTest, TheKeyExpiresWhenItsPeriodEnds) {
  redis_time_.set(kBerlinMidnight);
  client_time_.set(kBerlinMidnight);
  ASSERT_TRUE(store::acquire_now(*store_, ref("k"), 1)->verdict.allowed);
  ASSERT_TRUE(
      store::apply_quota_now(*store_, ref("c"), {.operation = QuotaOperation::kCharge, .cost = 1})
          ->verdict.allowed);
  for (const char* key : {"sluice:{calendar.test:k}:0", "sluice:{calendar.test:c}:0"}) {
    StatusOr<redis::Reply> ttl = client_->command({"PTTL", key});
    ASSERT_TRUE(ttl.ok());
    // Redis counts the TTL down on its real clock: a few ms may have passed.
    EXPECT_LE(ttl->as_integer(), 23 * kHour / kMicrosPerMilli) << key;
    EXPECT_GT(ttl->as_integer(), 23 * kHour / kMicrosPerMilli - 10'000) << key;
  }
}

}  // namespace
}  // namespace sluice::store
