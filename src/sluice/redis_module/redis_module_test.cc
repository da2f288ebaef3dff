// SLUICE.EVALUATE against the `evaluate` script it mirrors, on a real redis-server with sluice.so
// loaded with the test-only pinned clock: random traces over every algorithm kind
// (trace_generator.h) sent to the script under key prefix A and to the module under prefix B must
// answer the same bytes and leave the same keys (type, value or members, TTL). And the same keys
// driven by the script and the module in turn decide exactly as the script alone: switching engines
// neither resets nor doubles a limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "sluice/redis_module/module_test_support.h"
#include "sluice/redis_module/request.h"
#include "sluice/redis_module/trace_generator.h"
#include "sluice/store/redis/script_set.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::redis_module::test {
namespace {

// The operation numbers the module reads are the script's (request.h Operation).
static_assert(static_cast<int>(Operation::kAcquire) ==
              static_cast<int>(store::EvaluateOperation::kAcquire));
static_assert(static_cast<int>(Operation::kInspect) ==
              static_cast<int>(store::EvaluateOperation::kInspect));
static_assert(static_cast<int>(Operation::kPenalizedAcquire) ==
              static_cast<int>(store::EvaluateOperation::kPenalizedAcquire));
static_assert(kVerdictBytes == store::kVerdictBytes);
static_assert(kPenalizedVerdictBytes == store::kPenalizedVerdictBytes);

constexpr int kSeeds = 40;
constexpr int kSteps = 60;

enum class Engine { kScript, kModule };

class ModuleDifferentialTest : public testing::Test {
 protected:
  void SetUp() override {
    auto server = start_redis_with_module(/*pinned_clock=*/true);
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(*server);
    auto connection = Connection::open(server_->port());
    ASSERT_TRUE(connection.ok()) << connection.status().to_string();
    connection_ = std::move(*connection);
    const store::ScriptSet scripts(/*pinned_time=*/true);
    const Reply loaded = connection_->command(
        {"SCRIPT", "LOAD", scripts.get(store::ScriptOperation::kAcquire).source()});
    ASSERT_FALSE(loaded.is_error()) << loaded.text;
    sha_ = loaded.text;
    const Reply lease = connection_->command(
        {"SCRIPT", "LOAD", scripts.get(store::ScriptOperation::kLease).source()});
    ASSERT_FALSE(lease.is_error()) << lease.text;
    lease_sha_ = lease.text;
    // Assembled as redis_store_penalty.cc assembles it.
    std::string penalty(store::scripts::lua_clock_pinned());
    penalty += store::scripts::lua_common();
    penalty += store::scripts::lua_penalty();
    const Reply box = connection_->command({"SCRIPT", "LOAD", penalty});
    ASSERT_FALSE(box.is_error()) << box.text;
    penalty_sha_ = box.text;
  }

  // A lease or penalty-box call on the trace's keys, for both engines: release / renew a lease
  // the trace issued (or one never issued), list the leases, show / lift a penalty box.
  struct SideCall {
    bool lease = true;
    std::vector<std::string> key_suffixes;  // under TraceGenerator::key(prefix, ...)
    std::size_t policy = 0;
    int subject = 0;
    std::vector<std::string> args;
  };

  static std::optional<SideCall> side_call(const TraceGenerator& trace, std::mt19937_64& random) {
    const auto& policies = trace.policies();
    SideCall call;
    call.policy = random() % policies.size();
    call.subject = static_cast<int>(random() % kTraceSubjects);
    const TracePolicy& policy = policies[call.policy];
    if (random() % 2 == 0 && policy.penalty) {
      call.lease = false;
      call.key_suffixes = {"penalty"};
      call.args = {random() % 4 == 0 ? "lift" : "show", std::to_string(policy.penalty->within),
                   std::to_string(policy.penalty->quiet)};
      return call;
    }
    std::vector<std::string> ttls;
    for (std::size_t i = 0; i < policy.limits.size(); ++i) {
      if (const auto* limit = std::get_if<algorithm::Concurrency>(&policy.limits[i])) {
        call.key_suffixes.push_back(std::to_string(i));
        ttls.push_back(std::to_string(limit->lease_ttl));
      }
    }
    if (call.key_suffixes.empty()) return std::nullopt;
    const int roll = static_cast<int>(random() % 5);
    if (roll == 0) {
      call.args = {"list", std::to_string(random() % 4)};
      return call;
    }
    const std::uint64_t issued = trace.leases_issued();
    const std::uint64_t pick = issued == 0 ? 0 : random() % (issued + 1);  // 0: never issued
    call.args = {roll < 3 ? "release" : "renew", "lease-" + std::to_string(pick)};
    call.args.insert(call.args.end(), ttls.begin(), ttls.end());
    return call;
  }

  std::vector<std::string> side_command(Engine engine, const SideCall& call,
                                        const std::string& prefix, Micros now) const {
    std::vector<std::string> args;
    if (engine == Engine::kScript) {
      args = {"EVALSHA", call.lease ? lease_sha_ : penalty_sha_};
    } else {
      args = {call.lease ? "SLUICE.LEASE" : "SLUICE.PENALTY"};
    }
    args.push_back(std::to_string(call.key_suffixes.size()));
    for (const std::string& suffix : call.key_suffixes) {
      args.push_back(TraceGenerator::key(prefix, call.policy, call.subject, suffix));
    }
    args.insert(args.end(), call.args.begin(), call.args.end());
    args.push_back(std::to_string(now));
    return args;
  }

  std::vector<std::string> command(Engine engine, const TraceCall& call) const {
    std::vector<std::string> args;
    if (engine == Engine::kScript) {
      args = {"EVALSHA", sha_};
    } else {
      args = {"SLUICE.EVALUATE"};
    }
    args.push_back(std::to_string(call.keys.size()));
    args.insert(args.end(), call.keys.begin(), call.keys.end());
    args.insert(args.end(), call.args.begin(), call.args.end());
    return args;
  }

  // Keys of another type, or strings no algorithm wrote, planted under both prefixes alike.
  void plant_foreign_keys(TraceGenerator& trace, std::uint64_t seed,
                          const std::vector<std::string>& prefixes) {
    const std::vector<std::string> keys = trace.all_keys("");
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if ((seed + i) % 7 != 0) continue;
      for (const std::string& prefix : prefixes) {
        const std::string key = prefix + keys[i];
        switch ((seed + i) % 3) {
          case 0:
            connection_->command({"RPUSH", key, "not", "a", "limit"});
            break;
          case 1:
            connection_->command({"HSET", key, "field", "value"});
            break;
          default:
            connection_->command({"SET", key, "stale:5"});
            break;
        }
      }
    }
  }

  // Sends one step to both engines in one pipeline (Redis runs the two calls back to back) and
  // remembers how long the longest such pipeline took: the most by which two twins' writes, and
  // so their TTLs' ends, can lie apart.
  std::vector<Reply> send(const std::vector<std::vector<std::string>>& commands) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Reply> replies = connection_->pipeline(commands);
    const auto took = std::chrono::steady_clock::now() - start;
    write_gap_ms_ = std::max<long long>(write_gap_ms_,
                                        std::chrono::ceil<std::chrono::milliseconds>(took).count());
    return replies;
  }

  // Starts a trace on an empty keyspace (traces share key names, and each restarts the pinned
  // time).
  void start_trace() {
    connection_->command({"FLUSHALL"});
    write_gap_ms_ = 0;
    last_step_ = std::chrono::steady_clock::now();
  }

  // µs on the machine's clock since the previous step (trace_generator.h next_step).
  Micros real_elapsed() {
    const auto now = std::chrono::steady_clock::now();
    const auto elapsed = std::chrono::ceil<std::chrono::microseconds>(now - last_step_).count();
    last_step_ = now;
    return elapsed;
  }

  // Asserts that the keys under the two prefixes hold the same state. Each TTL runs from the
  // moment of its write on Redis's clock, and twins are written and read a moment apart: their
  // PTTLs agree within those moments (measured) and 2 ms of rounding.
  void expect_same_keys(const TraceGenerator& trace, const std::string& a, const std::string& b) {
    // Each key beside its twin, so their PTTLs are read microseconds apart.
    const std::vector<std::string> names = trace.all_keys("");
    std::vector<std::string> pairs;
    for (const std::string& name : names) {
      pairs.push_back(a + name);
      pairs.push_back(b + name);
    }
    const auto start = std::chrono::steady_clock::now();
    const std::vector<KeyState> states = read_key_states(*connection_, pairs);
    const long long read_gap_ms =
        std::chrono::ceil<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start)
            .count();
    const long long tolerance = 2 + write_gap_ms_ + read_gap_ms;
    std::vector<KeyState> left;
    std::vector<KeyState> right;
    for (std::size_t i = 0; i + 1 < states.size(); i += 2) {
      left.push_back(states[i]);
      right.push_back(states[i + 1]);
    }
    for (std::size_t i = 0; i < left.size(); ++i) {
      SCOPED_TRACE(names[i]);
      // Redis expires keys on its real clock while the pinned time jumps: a key whose TTL runs
      // out between the two reads is gone on one side only.
      const bool left_gone = left[i].type == "none" || left[i].pttl == -2;
      const bool right_gone = right[i].type == "none" || right[i].pttl == -2;
      if (left_gone || right_gone) {
        if (left_gone != right_gone) {
          EXPECT_LE(left_gone ? right[i].pttl : left[i].pttl, tolerance) << "gone on one side only";
        }
        continue;
      }
      EXPECT_EQ(left[i].type, right[i].type);
      EXPECT_EQ(left[i].value, right[i].value);
      if (left[i].pttl < 0 || right[i].pttl < 0) {
        EXPECT_EQ(left[i].pttl, right[i].pttl);
      } else {
        EXPECT_LE(std::llabs(left[i].pttl - right[i].pttl), tolerance)
            << left[i].pttl << " vs " << right[i].pttl;
      }
    }
  }

  std::unique_ptr<sluice::test::RedisServer> server_;
  std::unique_ptr<Connection> connection_;
  std::string sha_;
  std::string lease_sha_;
  std::string penalty_sha_;
  long long write_gap_ms_ = 0;
  std::chrono::steady_clock::time_point last_step_;
};

// allowed (the first double) of each verdict in `reply`, counted.
void count_verdicts(const std::string& reply, int& allowed, int& denied) {
  for (std::size_t at = 0; at + kVerdictBytes <= reply.size(); at += kVerdictBytes) {
    double first = 0;
    std::memcpy(&first, reply.data() + at, sizeof first);
    (first == 1 ? allowed : denied) += 1;
  }
}

TEST_F(ModuleDifferentialTest, ModuleAnswersAndWritesExactlyAsTheScriptOnRandomTraces) {
  int allowed = 0;
  int denied = 0;
  int side_calls = 0;
  std::mt19937_64 random(34);
  for (int seed = 1; seed <= kSeeds && !HasFailure(); ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    TraceGenerator trace(static_cast<std::uint64_t>(seed));
    start_trace();
    plant_foreign_keys(trace, static_cast<std::uint64_t>(seed), {"A", "B"});
    for (int step = 0; step < kSteps && !HasFailure(); ++step) {
      SCOPED_TRACE(testing::Message() << "step " << step);
      trace.next_step(real_elapsed());
      const std::vector<Reply> replies = send(
          {command(Engine::kScript, trace.call("A")), command(Engine::kModule, trace.call("B"))});
      ASSERT_FALSE(replies[0].is_error()) << replies[0].text;
      ASSERT_FALSE(replies[1].is_error()) << replies[1].text;
      EXPECT_EQ(replies[0].text, replies[1].text);
      count_verdicts(replies[1].text, allowed, denied);
      expect_same_keys(trace, "A", "B");
      if (const std::optional<SideCall> side = side_call(trace, random)) {
        SCOPED_TRACE(side->args[0]);
        const std::vector<Reply> answers =
            send({side_command(Engine::kScript, *side, "A", trace.now()),
                  side_command(Engine::kModule, *side, "B", trace.now())});
        ASSERT_FALSE(answers[0].is_error()) << answers[0].text;
        EXPECT_EQ(answers[0], answers[1]);
        ++side_calls;
        expect_same_keys(trace, "A", "B");
      }
    }
  }
  // The traces reached both sides of the limits (the reply sizes are mostly 7 doubles).
  EXPECT_GT(allowed, 500);
  EXPECT_GT(denied, 500);
  EXPECT_GT(side_calls, 200);
}

TEST_F(ModuleDifferentialTest, SwitchingEnginesOnTheSameKeysNeitherResetsNorDoublesALimit) {
  // Keys under S are driven by the script and the module in turn (a rolling upgrade, a node
  // falling back to scripts); keys under A by the script alone. Every decision and every key
  // must agree; so must their leases and penalty boxes.
  std::mt19937_64 random(35);
  for (int seed = 101; seed < 101 + kSeeds / 2 && !HasFailure(); ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    TraceGenerator trace(static_cast<std::uint64_t>(seed));
    start_trace();
    plant_foreign_keys(trace, static_cast<std::uint64_t>(seed), {"A", "S"});
    for (int step = 0; step < kSteps && !HasFailure(); ++step) {
      SCOPED_TRACE(testing::Message() << "step " << step);
      trace.next_step(real_elapsed());
      const Engine engine = (step / 2 + seed) % 2 == 0 ? Engine::kScript : Engine::kModule;
      const std::vector<Reply> replies =
          send({command(Engine::kScript, trace.call("A")), command(engine, trace.call("S"))});
      ASSERT_FALSE(replies[0].is_error()) << replies[0].text;
      ASSERT_FALSE(replies[1].is_error()) << replies[1].text;
      EXPECT_EQ(replies[0].text, replies[1].text);
      expect_same_keys(trace, "A", "S");
      if (const std::optional<SideCall> side = side_call(trace, random)) {
        SCOPED_TRACE(side->args[0]);
        const Engine side_engine = step % 2 == 0 ? Engine::kModule : Engine::kScript;
        const std::vector<Reply> answers =
            send({side_command(Engine::kScript, *side, "A", trace.now()),
                  side_command(side_engine, *side, "S", trace.now())});
        ASSERT_FALSE(answers[0].is_error()) << answers[0].text;
        EXPECT_EQ(answers[0], answers[1]);
        expect_same_keys(trace, "A", "S");
      }
    }
  }
}

TEST_F(ModuleDifferentialTest, ADecisionNamingOneKeyTwiceDecidesAsTheScript) {
  // Two limits (and the penalty box) on one key: the module closes each key after reading it and
  // opens it again to write (key_io.h StringKey), as the script reads and writes in turn.
  using namespace algorithm;
  const Limit limits[] = {FixedWindow{.limit = 3, .window = kMicrosPerSecond},
                          Gcra{.rate = 2, .period = kMicrosPerSecond, .burst = 1}};
  const Penalty penalty{.after = 1,
                        .within = kMicrosPerSecond,
                        .block = kMicrosPerSecond,
                        .escalate = 2,
                        .max = 4 * kMicrosPerSecond,
                        .quiet = 2 * kMicrosPerSecond};
  start_trace();
  Micros now = 1'700'000'000'000'000;
  for (int step = 0; step < 12; ++step) {
    if (step % 4 == 0) {  // another type's key, which the first write replaces
      connection_->pipeline(
          {{"DEL", "A:twice", "B:twice"}, {"RPUSH", "A:twice", "x"}, {"RPUSH", "B:twice", "x"}});
    }
    SCOPED_TRACE(step);
    now += 150 * kMicrosPerMilli;
    const std::string request = store::decision_request(
        store::ScriptOperation::kAcquire, limits, 1, now, {}, step % 2 == 0 ? &penalty : nullptr);
    const auto command = [&](Engine engine, const std::string& key) {
      std::vector<std::string> args;
      if (engine == Engine::kScript) {
        args = {"EVALSHA", sha_};
      } else {
        args = {"SLUICE.EVALUATE"};
      }
      const bool penalized = step % 2 == 0;
      args.push_back(penalized ? "3" : "2");
      for (int k = 0; k < (penalized ? 3 : 2); ++k) args.push_back(key);
      args.push_back(request);
      args.push_back(std::to_string(now));
      return args;
    };
    const std::vector<Reply> replies =
        send({command(Engine::kScript, "A:twice"), command(Engine::kModule, "B:twice")});
    ASSERT_FALSE(replies[0].is_error()) << replies[0].text;
    EXPECT_EQ(replies[0].text, replies[1].text);
    const std::vector<KeyState> states = read_key_states(*connection_, {"A:twice", "B:twice"});
    EXPECT_EQ(states[0].type, states[1].type);
    EXPECT_EQ(states[0].value, states[1].value);
  }
}

}  // namespace
}  // namespace sluice::redis_module::test
