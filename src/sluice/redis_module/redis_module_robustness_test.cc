// SLUICE.EVALUATE under abuse, on a real redis-server with sluice.so loaded on Redis's own clock:
// malformed and random arguments, wrong key types and huge costs answer errors (or, where the
// script would decide, a decision), and Redis keeps answering PING; key positions are reported
// for Cluster routing and ACLs; and hundreds of clients racing on one key through the module are
// admitted exactly the limit.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/redis_module/module_test_support.h"
#include "sluice/redis_module/request.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::redis_module::test {
namespace {

using namespace algorithm;

constexpr Micros kHour = kMicrosPerHour;

class ModuleRobustnessTest : public testing::Test {
 protected:
  void SetUp() override {
    auto server = start_redis_with_module(/*pinned_clock=*/false);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    auto connection = Connection::open(server_->port());
    ASSERT_TRUE(connection.ok()) << connection.status().to_string();
    connection_ = std::move(*connection);
  }

  // Sends `args`; the reply must be a decision (bulk string) or an error starting with "ERR",
  // and Redis must answer PING afterwards.
  Reply send_and_ping(const std::vector<std::string>& args) {
    const std::vector<Reply> replies = connection_->pipeline({args, {"PING"}});
    if (replies[0].is_error()) {
      EXPECT_EQ(replies[0].text.rfind("ERR", 0), 0u) << replies[0].text;
    } else {
      EXPECT_EQ(replies[0].type, REDIS_REPLY_STRING);
    }
    EXPECT_EQ(replies[1].text, "PONG") << "Redis stopped answering";
    return replies[0];
  }

  std::unique_ptr<sluice::test::RedisServer> server_;
  std::unique_ptr<Connection> connection_;
};

std::string acquire(std::span<const Limit> limits, std::int64_t cost, std::string_view lease = {}) {
  return store::decision_request(store::ScriptOperation::kAcquire, limits, cost,
                                 1'700'000'000'000'000, lease);
}

const Limit kGcra[] = {Gcra{.rate = 1, .period = kHour, .burst = 99}};

TEST_F(ModuleRobustnessTest, MalformedCallsAnswerErrorsAndChangeNothing) {
  const std::string valid = acquire(kGcra, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::vector<std::string>> calls = {
      {"SLUICE.EVALUATE"},
      {"SLUICE.EVALUATE", "one", "k", valid},
      {"SLUICE.EVALUATE", "-1", "k", valid},
      {"SLUICE.EVALUATE", "3", "k", valid},
      {"SLUICE.EVALUATE", "0", valid},  // no key for its limit
      {"SLUICE.EVALUATE", "1", "k", ""},
      {"SLUICE.EVALUATE", "1", "k", "not packed doubles at all, only text of some length"},
  };
  // Every prefix of a valid request, and every field replaced by NaN, infinity or 2^60.
  for (std::size_t length = 0; length < valid.size(); length += 3) {
    calls.push_back({"SLUICE.EVALUATE", "1", "k", valid.substr(0, length)});
  }
  for (std::size_t field = 0; field + 8 <= valid.size(); field += 8) {
    for (const double value : {nan, std::numeric_limits<double>::infinity(), 0x1p60, -1.0, 0.5}) {
      std::string bytes = valid;
      std::memcpy(bytes.data() + field, &value, sizeof value);
      calls.push_back({"SLUICE.EVALUATE", "1", "k", bytes});
    }
  }
  // Huge costs and repeat counts.
  for (const std::int64_t cost : {std::int64_t{1} << 40, std::int64_t{1} << 52}) {
    calls.push_back({"SLUICE.EVALUATE", "1", "k", acquire(kGcra, cost)});
  }
  std::string repeated = valid;
  store::set_request_repeats(repeated, std::size_t{1} << 50);
  calls.push_back({"SLUICE.EVALUATE", "1", "k", repeated});
  int errors = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE(i);
    const Reply reply = send_and_ping(calls[i]);
    if (reply.is_error()) ++errors;
  }
  // Every call above is malformed: -1 is no valid repeat count, operation, cost, limit count,
  // kind or parameter of this limit either.
  EXPECT_EQ(errors, static_cast<int>(calls.size()));
  // Nothing was written by a refused call.
  EXPECT_EQ(connection_->command({"EXISTS", "k"}).integer, 0);
  // A well-formed call still decides.
  const Reply decided = send_and_ping({"SLUICE.EVALUATE", "1", "k", valid});
  EXPECT_EQ(decided.text.size(), kVerdictBytes);
}

TEST_F(ModuleRobustnessTest, KeysOfEveryOtherTypeReadAsAbsentAndAreReplacedOnAdmission) {
  const Limit limits[] = {
      Gcra{.rate = 1, .period = kHour, .burst = 1},
      TokenBucket{
          .capacity = 2, .refill = 1, .period = kHour, .refill_mode = RefillMode::kInterval},
      LeakyBucket{.rate = 1, .period = kHour, .max_delay = kHour},
      FixedWindow{.limit = 2, .window = kHour},
      SlidingWindow{.limit = 2, .window = kHour},
      SlidingLog{.limit = 2, .window = kHour},
      Concurrency{.limit = 2, .lease_ttl = kHour}};
  const std::vector<std::vector<std::string>> plant = {
      {"RPUSH", "", "x"},     {"SADD", "", "x"},           {"ZADD", "", "1", "x"},
      {"HSET", "", "f", "v"}, {"XADD", "", "*", "f", "v"}, {"SET", "", "\xff\xfe junk 7"}};
  for (const Limit& limit : limits) {
    for (const std::vector<std::string>& command : plant) {
      SCOPED_TRACE(testing::Message() << algorithm_name(limit) << " over " << command[0]);
      std::vector<std::string> planted = command;
      planted[1] = "wrong";
      connection_->command({"DEL", "wrong"});
      connection_->command(planted);
      const Reply reply = send_and_ping(
          {"SLUICE.EVALUATE", "1", "wrong", acquire(std::span(&limit, 1), 1, "lease-1")});
      ASSERT_FALSE(reply.is_error()) << reply.text;
      double allowed = 0;
      std::memcpy(&allowed, reply.text.data(), sizeof allowed);
      EXPECT_EQ(allowed, 1) << "another type's key reads as a fresh state";
      const bool log = std::holds_alternative<SlidingLog>(limit);
      const bool leases = std::holds_alternative<Concurrency>(limit);
      EXPECT_EQ(connection_->command({"TYPE", "wrong"}).text,
                log ? "zset" : (leases ? "hash" : "string"));
      EXPECT_GT(connection_->command({"PTTL", "wrong"}).integer, 0);
    }
  }
}

TEST_F(ModuleRobustnessTest, RandomArgumentsNeverCrashRedis) {
  std::mt19937_64 random(34);
  const Limit limits[] = {FixedWindow{.limit = 5, .window = kHour},
                          Concurrency{.limit = 3, .lease_ttl = kHour}};
  const std::string valid = acquire(limits, 1, "lease");
  for (int i = 0; i < 1500; ++i) {
    SCOPED_TRACE(i);
    std::vector<std::string> args = {"SLUICE.EVALUATE"};
    const int keys = static_cast<int>(random() % 4);
    args.push_back(random() % 10 == 0 ? std::to_string(random() % 9) : std::to_string(keys));
    for (int k = 0; k < keys; ++k) args.push_back("fuzz:" + std::to_string(random() % 3));
    const int requests = static_cast<int>(random() % 3);
    for (int r = 0; r < requests; ++r) {
      std::string bytes = valid;
      if (random() % 2 == 0) bytes.resize(random() % (bytes.size() + 1));
      for (int flip = static_cast<int>(random() % 4); flip > 0 && !bytes.empty(); --flip) {
        bytes[random() % bytes.size()] = static_cast<char>(random());
      }
      args.push_back(bytes);
    }
    send_and_ping(args);
    if (HasFailure()) break;
  }
}

TEST_F(ModuleRobustnessTest, ReportsItsKeysForClusterRoutingAndAcls) {
  const Reply keys = connection_->command(
      {"COMMAND", "GETKEYS", "SLUICE.EVALUATE", "2", "first", "second", "request"});
  ASSERT_EQ(keys.elements.size(), 2u);
  EXPECT_EQ(keys.elements[0].text, "first");
  EXPECT_EQ(keys.elements[1].text, "second");
  // A user limited to keys "allowed:*" may decide on those and no other.
  connection_->command({"ACL", "SETUSER", "limited", "on", "nopass", "~allowed:*", "+@all"});
  const std::string request = acquire(kGcra, 1);
  const std::vector<Reply> replies =
      connection_->pipeline({{"AUTH", "limited", "x"},
                             {"SLUICE.EVALUATE", "1", "allowed:1", request},
                             {"SLUICE.EVALUATE", "1", "denied:1", request}});
  EXPECT_FALSE(replies[1].is_error()) << replies[1].text;
  ASSERT_TRUE(replies[2].is_error());
  EXPECT_EQ(replies[2].text.rfind("NOPERM", 0), 0u) << replies[2].text;
}

// Hundreds of clients, each on its own connection, acquire on one key at once: exactly the limit
// is admitted (each decision is atomic inside Redis).
TEST_F(ModuleRobustnessTest, HundredsOfRacingClientsAreAdmittedExactlyTheLimit) {
  constexpr int kClients = 200;
  constexpr int kCallsEach = 5;
  const Limit gcra[] = {Gcra{.rate = 1, .period = kHour, .burst = 99}};  // 100 now
  const Limit leases[] = {Concurrency{.limit = 100, .lease_ttl = kHour}};
  const Limit log[] = {SlidingLog{.limit = 100, .window = kHour}};
  std::atomic<int> ready{0};
  std::atomic<int> admitted[3] = {0, 0, 0};
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto connection = Connection::open(server_->port());
      ready.fetch_add(1);
      if (!connection.ok()) {
        failures.fetch_add(1);
        return;
      }
      while (ready.load() < kClients) std::this_thread::yield();
      for (int i = 0; i < kCallsEach; ++i) {
        const std::string lease = "lease-" + std::to_string(c) + "-" + std::to_string(i);
        const std::vector<Reply> replies =
            (*connection)
                ->pipeline({{"SLUICE.EVALUATE", "1", "race:gcra", acquire(gcra, 1)},
                            {"SLUICE.EVALUATE", "1", "race:leases", acquire(leases, 1, lease)},
                            {"SLUICE.EVALUATE", "1", "race:log", acquire(log, 1)}});
        count_admitted(replies, admitted, failures);
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(admitted[0].load(), 100);
  EXPECT_EQ(admitted[1].load(), 100);
  EXPECT_EQ(admitted[2].load(), 100);
  EXPECT_EQ(connection_->command({"HLEN", "race:leases"}).integer, 100);
  EXPECT_EQ(connection_->command({"ZCARD", "race:log"}).integer, 100);
}

}  // namespace
}  // namespace sluice::redis_module::test
