// Integration tests of the penalty box in the Redis store (algorithm/penalty.h) on Redis's own
// clock: a penalized acquire is one script call and no other command; the penalty key expires
// (after its last strike's window, then after its block plus the quiet period); penalized
// decisions of many subjects batched together block each subject exactly as alone; lift and
// reset forget the box. The arithmetic is pinned by the conformance traces (penalty_*.json).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/redis_store_test_fixture.h"

namespace sluice::store {
namespace {

using algorithm::FixedWindow;
using algorithm::Limit;
using algorithm::Penalty;

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kHour = 3600 * kSecond;

const Limit kOnePerHour[] = {FixedWindow{.limit = 1, .window = kHour}};
const Penalty kPenalty{.after = 2,
                       .within = 60 * kSecond,
                       .block = 10 * kSecond,
                       .escalate = 2,
                       .max = 40 * kSecond,
                       .quiet = 30 * kSecond};

class RedisStorePenaltyTest : public RedisServerTest {
 protected:
  void SetUp() override {
    RedisServerTest::SetUp();
    if (HasFatalFailure()) return;
    store_ = std::make_unique<RedisStore>(client_);
  }

  SubjectRef ref(std::string_view subject) const {
    return {
        .policy = "penalty.test", .limits = kOnePerHour, .subject = subject, .penalty = &kPenalty};
  }

  std::int64_t pttl(const std::string& key) {
    StatusOr<redis::Reply> ttl = client_->command({"PTTL", key});
    EXPECT_TRUE(ttl.ok());
    return ttl.ok() ? ttl->as_integer() : 0;
  }

  // Calls of every command Redis has run, by name (INFO commandstats), INFO itself left out.
  std::map<std::string, std::int64_t> command_calls() {
    StatusOr<redis::Reply> info = client_->command({"INFO", "commandstats"});
    EXPECT_TRUE(info.ok());
    std::map<std::string, std::int64_t> calls;
    std::istringstream lines(std::string(info->as_string()));
    for (std::string line; std::getline(lines, line);) {
      const std::size_t colon = line.find(':');
      const std::size_t at = line.find("calls=");
      if (!line.starts_with("cmdstat_") || colon == std::string::npos || at == std::string::npos) {
        continue;
      }
      const std::string name = line.substr(8, colon - 8);
      if (name != "info") calls[name] = std::stoll(line.substr(at + 6));
    }
    return calls;
  }

  std::unique_ptr<RedisStore> store_;
};

TEST_F(RedisStorePenaltyTest, APenalizedAcquireIsOneScriptCallAndNoOtherCommand) {
  ASSERT_TRUE(
      store::acquire_now(*store_, ref("warm"), 1).ok());  // loads the script (SCRIPT LOAD / EVAL)
  const std::map<std::string, std::int64_t> before = command_calls();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store::acquire_now(*store_, ref("s"), 1).ok());
  std::map<std::string, std::int64_t> after = command_calls();
  // Inside a script the commands are counted too (TIME, GET, SET): the client sent EVALSHA only.
  EXPECT_EQ(after["evalsha"] - before.at("evalsha"), 5);
  for (const auto& [name, count] : after) {
    if (name == "evalsha" || name == "time" || name == "get" || name == "set") continue;
    const auto was = before.find(name);
    EXPECT_EQ(count, was == before.end() ? 0 : was->second) << name;
  }
}

TEST_F(RedisStorePenaltyTest, ThePenaltyKeyExpiresAfterItsStrikesAndThenAfterItsQuietPeriod) {
  const std::string key = "sluice:{penalty.test:s}:p";
  ASSERT_TRUE(store::acquire_now(*store_, ref("s"), 1)->verdict.allowed);
  EXPECT_EQ(pttl(key), -2) << "an allowed request writes no penalty state";
  const StatusOr<Decision> strike = store::acquire_now(*store_, ref("s"), 1);
  ASSERT_TRUE(strike.ok());
  EXPECT_FALSE(strike->verdict.blocked_until);
  EXPECT_GT(pttl(key), 59'000);  // the strike's window: 60 s
  EXPECT_LE(pttl(key), 60'000);
  const StatusOr<Decision> blocked = store::acquire_now(*store_, ref("s"), 1);
  ASSERT_TRUE(blocked.ok());
  ASSERT_TRUE(blocked->verdict.blocked_until);
  EXPECT_GE(blocked->verdict.retry_after, 10 * kSecond);  // at least the block
  EXPECT_EQ(blocked->verdict.remaining, 0);
  // Strikes cleared; the block (10 s) plus the quiet period (30 s) remain.
  EXPECT_GT(pttl(key), 39'000);
  EXPECT_LE(pttl(key), 40'000);
  const StatusOr<PenaltyStatus> shown = store_->penalty(ref("s"));
  ASSERT_TRUE(shown.ok());
  EXPECT_EQ(shown->blocked_until, blocked->verdict.blocked_until);
  EXPECT_GT(*shown->blocked_for, 9 * kSecond);
  EXPECT_EQ(shown->blocks, 1);
  EXPECT_EQ(shown->strikes, 0);
}

TEST_F(RedisStorePenaltyTest, LiftAndResetForgetTheBox) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store::acquire_now(*store_, ref("s"), 1).ok());
  ASSERT_TRUE(store_->penalty(ref("s"))->blocked_until);
  const StatusOr<bool> lifted_now = store_->lift_penalty(ref("s"));
  ASSERT_TRUE(lifted_now.ok());
  EXPECT_TRUE(*lifted_now);
  EXPECT_EQ(pttl("sluice:{penalty.test:s}:p"), -2);
  const StatusOr<PenaltyStatus> lifted = store_->penalty(ref("s"));
  ASSERT_TRUE(lifted.ok());
  EXPECT_EQ(*lifted, PenaltyStatus{});
  const StatusOr<bool> lifted_again = store_->lift_penalty(ref("s"));
  ASSERT_TRUE(lifted_again.ok());
  EXPECT_FALSE(*lifted_again);
  // The limit kept its state: still denied, but a strike now, not a block.
  const StatusOr<Decision> denied = store::acquire_now(*store_, ref("s"), 1);
  ASSERT_TRUE(denied.ok());
  EXPECT_FALSE(denied->verdict.allowed);
  EXPECT_FALSE(denied->verdict.blocked_until);
  ASSERT_TRUE(store_->reset(ref("s")).ok());
  EXPECT_EQ(pttl("sluice:{penalty.test:s}:p"), -2);
  EXPECT_TRUE(store::acquire_now(*store_, ref("s"), 1)->verdict.allowed);
  // Without a penalty in the ref: InvalidArgument naming the field.
  const SubjectRef plain{.policy = "penalty.test", .limits = kOnePerHour, .subject = "s"};
  EXPECT_EQ(store_->penalty(plain).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(RedisStorePenaltyTest, BatchedDecisionsOfManySubjectsBlockEachAsAlone) {
  constexpr int kSubjects = 40;
  constexpr int kPerSubject = 5;
  std::vector<std::string> subjects;
  for (int s = 0; s < kSubjects; ++s) subjects.push_back("subject-" + std::to_string(s));
  std::mutex mutex;
  std::condition_variable all_done;
  int done = 0;
  std::map<std::string, std::vector<Decision>> decided;
  // Round robin, all in flight at once: the batcher packs decisions of many subjects (and equal
  // requests of one policy) into shared script calls.
  for (int round = 0; round < kPerSubject; ++round) {
    for (const std::string& subject : subjects) {
      store_->acquire(ref(subject), 1, [&, subject](StatusOr<Decision> decision) {
        std::lock_guard lock(mutex);
        EXPECT_TRUE(decision.ok()) << decision.status().to_string();
        if (decision.ok()) decided[subject].push_back(*decision);
        if (++done == kSubjects * kPerSubject) all_done.notify_one();
      });
    }
  }
  {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(all_done.wait_for(lock, std::chrono::seconds(30),
                                  [&] { return done == kSubjects * kPerSubject; }));
  }
  for (const std::string& subject : subjects) {
    SCOPED_TRACE(subject);
    int allowed = 0;
    int unblocked_denials = 0;
    int blocked = 0;
    for (const Decision& decision : decided[subject]) {
      if (decision.verdict.allowed) {
        ++allowed;
      } else if (decision.verdict.blocked_until) {
        ++blocked;
      } else {
        ++unblocked_denials;
      }
    }
    // 1 allowed; denial 1 is a strike; denial 2 starts the block; denials 3 and 4 meet it.
    EXPECT_EQ(allowed, 1);
    EXPECT_EQ(unblocked_denials, 1);
    EXPECT_EQ(blocked, 3);
  }
  const DecisionBatchStats stats = store_->batch_stats();
  EXPECT_EQ(stats.decisions, std::uint64_t{kSubjects * kPerSubject});
}

}  // namespace
}  // namespace sluice::store
