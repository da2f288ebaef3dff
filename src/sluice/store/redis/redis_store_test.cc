// Integration tests of RedisStore: every test talks to a real redis-server on a free loopback port
// (tests/testing/redis_server.h); nothing is mocked. They check that the Lua scripts decide
// exactly like the in-process algorithms (differential test against MemoryStore with time
// pinned), that limits hold under races between processes on Redis's own clock, that every key
// expires, that subjects are binary safe, and how the store fails when Redis does.
#include "sluice/store/redis/redis_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/clock.h"
#include "sluice/core/key.h"
#include "sluice/store/memory/memory_store.h"
#include "testing/redis_server.h"

namespace sluice::algorithm {

// Readable verdicts in assertion failures (found by GoogleTest through ADL).
void PrintTo(const Verdict& v, std::ostream* out) {
  *out << "{allowed=" << v.allowed << " limit=" << v.limit << " remaining=" << v.remaining
       << " retry_after=" << (v.retry_after ? std::to_string(*v.retry_after) : "none")
       << " reset_after=" << v.reset_after
       << " delay=" << (v.delay ? std::to_string(*v.delay) : "none") << "}";
}

}  // namespace sluice::algorithm

namespace sluice::store {
namespace {

using algorithm::Concurrency;
using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::LeakyBucket;
using algorithm::Limit;
using algorithm::RefillMode;
using algorithm::SlidingLog;
using algorithm::SlidingWindow;
using algorithm::TokenBucket;
using algorithm::Verdict;
using redis::Reply;
using test::RedisServer;
using ::testing::AnyOf;
using SteadyClock = std::chrono::steady_clock;

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kLatestNow = 2'000'000'000'000'000;
constexpr auto kWaitLimit = std::chrono::seconds(20);

// ---- helpers -----------------------------------------------------------------------------------

std::unique_ptr<RedisServer> start_server() {
  StatusOr<std::unique_ptr<RedisServer>> server = RedisServer::start();
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  return server.ok() ? std::move(*server) : nullptr;
}

std::shared_ptr<redis::Multiplexer> make_client(std::uint16_t port,
                                                redis::MultiplexerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = port;
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::create(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::shared_ptr<redis::Multiplexer>(std::move(*client)) : nullptr;
}

// Polls until PING succeeds: the only waiting these tests do, for a server to come (back) up.
bool wait_until_answering(redis::Multiplexer& client,
                          std::chrono::milliseconds limit = kWaitLimit) {
  const auto deadline = SteadyClock::now() + limit;
  while (SteadyClock::now() < deadline) {
    StatusOr<Reply> reply = client.command({"PING"});
    if (reply.ok() && *reply == Reply::status("PONG")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::chrono::milliseconds elapsed_since(SteadyClock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
}

// The reply of a test-side command, recording a failure when the call itself failed.
Reply run(redis::Multiplexer& client, std::vector<std::string> args) {
  StatusOr<Reply> reply = client.command(std::move(args));
  if (reply.ok()) return std::move(*reply);
  ADD_FAILURE() << reply.status().to_string();
  return Reply::error("(call failed) " + reply.status().to_string());
}

std::int64_t run_integer(redis::Multiplexer& client, std::vector<std::string> args) {
  const Reply reply = run(client, std::move(args));
  EXPECT_TRUE(reply.is_integer()) << reply.debug_string();
  return reply.is_integer() ? reply.as_integer() : -100;
}

// Every key in the database (SCAN, so the server is never blocked).
std::vector<std::string> all_keys(redis::Multiplexer& client) {
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    const Reply reply = run(client, {"SCAN", cursor, "COUNT", "1000"});
    if (!reply.is_array() || reply.elements().size() != 2) {
      ADD_FAILURE() << "SCAN: " << reply.debug_string();
      break;
    }
    cursor = reply.elements()[0].as_string();
    for (const Reply& key : reply.elements()[1].elements()) keys.push_back(key.as_string());
  } while (cursor != "0");
  return keys;
}

SubjectRef ref(const std::vector<Limit>& limits, std::string_view subject,
               std::string_view policy = "test.policy") {
  return {.policy = policy, .limits = limits, .subject = subject};
}

// "sluice:{<policy>:<subject>}:<index>", spelled out here rather than taken from core/key.h so
// the test pins the documented scheme (docs/redis.md) instead of restating the implementation.
std::string documented_key(std::string_view policy, std::string_view subject, std::size_t index) {
  std::string key = "sluice:{";
  key.append(policy);
  key += ':';
  key.append(subject);
  key += "}:";
  key += std::to_string(index);
  return key;
}

std::string show(const std::optional<Micros>& value) {
  return value ? std::to_string(*value) : "none";
}

std::string show(const Verdict& v) {
  std::ostringstream out;
  out << "{allowed=" << v.allowed << " limit=" << v.limit << " remaining=" << v.remaining
      << " retry_after=" << show(v.retry_after) << " reset_after=" << v.reset_after
      << " delay=" << show(v.delay) << "}";
  return out.str();
}

std::string show(const Limit& limit) {
  std::ostringstream out;
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TokenBucket>) {
          out << "token_bucket{capacity=" << p.capacity << " refill=" << p.refill
              << " period=" << p.period
              << (p.refill_mode == RefillMode::kInterval ? " interval" : " smooth")
              << " initial=" << show(p.initial) << "}";
        } else if constexpr (std::is_same_v<P, Gcra>) {
          out << "gcra{rate=" << p.rate << " period=" << p.period << " burst=" << p.burst << "}";
        } else if constexpr (std::is_same_v<P, LeakyBucket>) {
          out << "leaky_bucket{rate=" << p.rate << " period=" << p.period
              << " max_delay=" << p.max_delay << "}";
        } else if constexpr (std::is_same_v<P, FixedWindow>) {
          out << "fixed_window{limit=" << p.limit << " window=" << p.window << "}";
        } else if constexpr (std::is_same_v<P, SlidingWindow>) {
          out << "sliding_window{limit=" << p.limit << " window=" << p.window << "}";
        } else if constexpr (std::is_same_v<P, SlidingLog>) {
          out << "sliding_log{limit=" << p.limit << " window=" << p.window << "}";
        } else {
          out << "concurrency{limit=" << p.limit << " lease_ttl=" << p.lease_ttl << "}";
        }
      },
      limit);
  return out.str();
}

std::string show(const std::vector<Limit>& limits) {
  std::string out = "[";
  for (const Limit& limit : limits) out += (out.size() > 1 ? ", " : "") + show(limit);
  return out + "]";
}

// Test-side script (not the store's): reads a subject's keys in one round trip. Replies Redis's
// clock in ms, then {PEXPIRETIME, DUMP-or-nil} per key; with ARGV[1] == "persist" it then drops
// each key's TTL.
const redis::Script& snapshot_script() {
  static const redis::Script kScript(R"lua(
local t = redis.call('TIME')
local out = {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)}
for _, key in ipairs(KEYS) do
  out[#out + 1] = redis.call('PEXPIRETIME', key)
  out[#out + 1] = redis.call('DUMP', key)
  if ARGV[1] == 'persist' then redis.call('PERSIST', key) end
end
return out
)lua");
  return kScript;
}

struct KeySnapshot {
  std::int64_t expires_at_ms = -2;   // Unix ms; -1: no TTL; -2: absent
  std::optional<std::string> value;  // DUMP serialization
};

struct Snapshot {
  std::int64_t redis_ms = 0;  // Redis's clock when the snapshot was taken
  std::vector<KeySnapshot> keys;
};

Snapshot snapshot(redis::Multiplexer& client, const std::vector<std::string>& keys, bool persist) {
  Snapshot out{.keys = std::vector<KeySnapshot>(keys.size())};
  StatusOr<Reply> reply =
      client.eval_script(snapshot_script(), keys, {persist ? "persist" : "read"});
  if (!reply.ok() || !reply->is_array() || reply->elements().size() != 1 + 2 * keys.size()) {
    ADD_FAILURE() << "snapshot: "
                  << (reply.ok() ? reply->debug_string() : reply.status().to_string());
    return out;
  }
  out.redis_ms = reply->elements()[0].as_integer();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out.keys[i].expires_at_ms = reply->elements()[1 + 2 * i].as_integer();
    const Reply& dump = reply->elements()[2 + 2 * i];
    if (dump.is_string()) out.keys[i].value = dump.as_string();
  }
  return out;
}

std::int64_t ceil_ms(Micros micros) { return (micros + kMicrosPerMilli - 1) / kMicrosPerMilli; }

// ---- 1. differential: RedisStore (Lua) vs MemoryStore (C++), time pinned ---------------------

using Rng = std::mt19937_64;

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
bool chance(Rng& rng, double p) { return std::bernoulli_distribution(p)(rng); }

Micros random_duration(Rng& rng) {
  static constexpr Micros kChoices[] = {
      1, 2, 7, 1'000, 1'001, 999'983, 1'000'000, 1'000'003, 10'000'000, 60'000'000, 3'600'000'000};
  if (chance(rng, 0.3)) return uniform(rng, 1, 5'000'000);
  return kChoices[uniform(rng, 0, std::size(kChoices) - 1)];
}

std::int64_t random_amount(Rng& rng) {
  const std::int64_t r = uniform(rng, 0, 99);
  if (r < 70) return uniform(rng, 1, 10);
  if (r < 95) return uniform(rng, 1, 100);
  return 1000;
}

// Parameters at the edge of what validation accepts: intermediate products just below 2^53.
Limit extreme_limit(Rng& rng) {
  constexpr std::int64_t kTop = kMaxExactInteger - 1;
  const std::int64_t small = uniform(rng, 1, 7);
  switch (uniform(rng, 0, 6)) {
    case 0:
      return TokenBucket{
          .capacity = small,
          .refill = 1,
          .period = (kTop - 1) / small,
          .refill_mode = uniform(rng, 0, 1) == 0 ? RefillMode::kSmooth : RefillMode::kInterval};
    case 1:
      return Gcra{.rate = 1, .period = (kTop - 1) / small, .burst = small - 1};
    case 2:
      return LeakyBucket{
          .rate = small, .period = uniform(rng, 1, kTop / 2), .max_delay = kTop / small - 1};
    case 3:
      return FixedWindow{.limit = small, .window = kTop / small};
    case 4:
      return SlidingWindow{.limit = small, .window = kTop / small};
    case 5:
      return SlidingLog{.limit = small, .window = kTop - uniform(rng, 0, 1000)};
    default:
      return Concurrency{.limit = small, .lease_ttl = kTop - uniform(rng, 0, 1000)};
  }
}

// Corners of the valid parameter space (docs/redis.md, "Known discrepancies"); the one the
// default run leaves out has a DISABLED_ test below.
struct GeneratorOptions {
  // token_bucket `initial` in policies with more than one limit: found MemoryStore bug A (a
  // peek rewrote an expired warm-up bucket); fixed, so on by default.
  bool warm_up_in_multi_limit_policies = true;
  // Parameters at the largest values validation accepts. Found discrepancy B before validation
  // got its 100-year horizon; passes since, and is left out of the default run for time.
  bool edge_of_validation = false;
};

Limit random_limit(Rng& rng, const GeneratorOptions& options) {
  if (options.edge_of_validation && chance(rng, 0.3)) return extreme_limit(rng);
  switch (uniform(rng, 0, 7)) {
    case 0:
    case 1: {
      TokenBucket p{
          .capacity = random_amount(rng),
          .refill = uniform(rng, 1, 10),
          .period = random_duration(rng),
          .refill_mode = uniform(rng, 0, 1) == 0 ? RefillMode::kSmooth : RefillMode::kInterval};
      if (chance(rng, 0.4)) p.initial = uniform(rng, 0, p.capacity);
      return p;
    }
    case 2:
      return Gcra{.rate = uniform(rng, 1, 10),
                  .period = random_duration(rng),
                  .burst = uniform(rng, 0, 10)};
    case 3: {
      LeakyBucket p{.rate = uniform(rng, 1, 10), .period = random_duration(rng)};
      const std::int64_t r = uniform(rng, 0, 2);
      p.max_delay = r == 0 ? 0 : r == 1 ? uniform(rng, 0, 3 * p.period) : random_duration(rng);
      return p;
    }
    case 4:
      return FixedWindow{.limit = random_amount(rng), .window = random_duration(rng)};
    case 5:
      return SlidingWindow{.limit = random_amount(rng), .window = random_duration(rng)};
    case 6:
      return SlidingLog{.limit = uniform(rng, 1, 50), .window = random_duration(rng)};
    default:
      return Concurrency{.limit = uniform(rng, 1, 5), .lease_ttl = random_duration(rng)};
  }
}

std::vector<Limit> random_policy(Rng& rng, const GeneratorOptions& options) {
  const std::int64_t r = uniform(rng, 0, 9);
  const std::size_t count = r < 6 ? 1 : r < 9 ? 2 : 3;
  std::vector<Limit> limits;
  while (limits.size() < count) {
    Limit limit = random_limit(rng, options);
    auto* bucket = std::get_if<TokenBucket>(&limit);
    if (bucket != nullptr && count > 1 && !options.warm_up_in_multi_limit_policies) {
      bucket->initial.reset();
    }
    if (algorithm::validate_limit(limit, "limit").empty()) limits.push_back(limit);
  }
  return limits;
}

// What each limit grants at most at once, and its longest duration (the time scale of gaps).
std::int64_t largest_grant(const std::vector<Limit>& limits) {
  std::int64_t most = 1;
  for (const Limit& limit : limits) {
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, TokenBucket>) {
            most = std::max(most, p.capacity);
          } else if constexpr (std::is_same_v<P, Gcra>) {
            most = std::max(most, p.burst + 1);
          } else if constexpr (std::is_same_v<P, LeakyBucket>) {
            most = std::max(most, p.rate);
          } else {
            most = std::max(most, p.limit);
          }
        },
        limit);
  }
  return most;
}

Micros longest_duration(const std::vector<Limit>& limits) {
  Micros most = 1;
  for (const Limit& limit : limits) {
    std::visit(
        [&](const auto& p) {
          using P = std::decay_t<decltype(p)>;
          if constexpr (std::is_same_v<P, TokenBucket> || std::is_same_v<P, Gcra>) {
            most = std::max(most, p.period);
          } else if constexpr (std::is_same_v<P, LeakyBucket>) {
            most = std::max({most, p.period, p.max_delay});
          } else if constexpr (std::is_same_v<P, Concurrency>) {
            most = std::max(most, p.lease_ttl);
          } else {
            most = std::max(most, p.window);
          }
        },
        limit);
  }
  return most;
}

std::int64_t random_cost(Rng& rng, std::int64_t grant) {
  const std::int64_t r = uniform(rng, 0, 99);
  if (r < 15) return 0;
  if (r < 60) return 1;
  if (r < 85) return uniform(rng, 1, grant + 1);
  if (r < 95) return grant + 1;
  return chance(rng, 0.5) ? algorithm::kMaxCost : uniform(rng, grant, 10 * grant);
}

Micros random_gap(Rng& rng, Micros scale) {
  const std::int64_t r = uniform(rng, 0, 99);
  if (r < 15) return 0;
  if (r < 20) return 1;
  if (r < 40) return uniform(rng, 1, 1'000);
  if (r < 80) return uniform(rng, 0, scale);
  if (r < 95) return uniform(rng, scale / 2, 3 * scale);
  return uniform(rng, kMicrosPerHour, 30 * kMicrosPerDay);
}

// What the random sequences exercised, so a generator that degenerates fails loudly.
struct Coverage {
  std::map<std::string, int> allowed;  // by algorithm name of limit 0
  int denied_with_retry = 0;
  int denied_never = 0;
  int peeks = 0;
  int inspects = 0;
  int dry_runs_with_retry = 0;  // dry runs of a positive cost denied with a retry_after
  int leases_listed = 0;        // live leases both stores listed alike
  int resets = 0;
  int leases_freed = 0;
  int leases_renewed = 0;
  int expired_keys_deleted = 0;      // Redis's expiry replayed (absent-key path)
  std::map<std::string, int> quota;  // quota operations both stores answered alike, by outcome
};

// Runs random operations on both stores side by side and reports the first difference.
//
// Besides the decisions it checks what lands in Redis: a call that must not write (a peek, a
// denial, an inspect) leaves every key byte-identical (DUMP), and a write sets a TTL of exactly
// the state's life as the memory store reports it (reset_after), in ms rounded up.
//
// Redis expires keys on its own (real) clock while decisions run on the pinned one, which would
// drop state that is still live at pinned time. So after each call the test takes the TTL over:
// it removes it (PERSIST) and deletes the key itself once pinned time reaches it, which is
// Redis's expiry replayed on the pinned clock. Both the absent-key and the present-but-stale
// paths of the scripts get exercised.
// The differential test reserves with every TTL a store may be configured to accept.
constexpr ReservationLimits kEveryReservationTtl{.max_ttl = kMaxReservationTtl};

class Differential {
 public:
  Differential(std::uint64_t seed, std::size_t index, const GeneratorOptions& options,
               RedisStore& redis, redis::Multiplexer& client, ManualClock& clock,
               Coverage& coverage)
      : rng_(seed),
        seed_(seed),
        redis_(redis),
        client_(client),
        clock_(clock),
        coverage_(coverage),
        memory_(clock, {.reservations = kEveryReservationTtl}) {
    policy_ = "diff." + std::to_string(index);
    limits_ = random_policy(rng_, options);
    subjects_ = {"alice", "bob", std::string("c\0{}\n\xff", 6)};
    chargeable_ = algorithm::check_quota_limits(limits_).ok();
    const std::int64_t debt = chance(rng_, 0.4) ? 0 : random_amount(rng_);
    if (algorithm::validate_max_debt(debt, limits_).empty()) max_debt_ = debt;
  }

  // True when both stores agreed on every call; otherwise `report()` says where.
  bool run(int operations) {
    for (int i = 0; i < operations && problem_.empty(); ++i) step();
    return problem_.empty();
  }

  std::string report() const {
    std::ostringstream out;
    out << "seed " << seed_ << ", policy " << show(limits_) << "\n"
        << problem_ << "\nlast calls:\n";
    const std::size_t first = log_.size() > 40 ? log_.size() - 40 : 0;
    for (std::size_t i = first; i < log_.size(); ++i) out << "  " << log_[i] << "\n";
    return out.str();
  }

 private:
  struct LeasePair {
    std::string memory;
    std::string redis;
    std::size_t subject;
  };

  std::vector<std::string> keys_of(std::size_t subject) const {
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < limits_.size(); ++i) {
      keys.push_back(documented_key(policy_, subjects_[subject], i));
    }
    return keys;
  }

  SubjectRef subject_ref(std::size_t subject) const {
    return {.policy = policy_, .limits = limits_, .subject = subjects_[subject]};
  }

  void fail(const std::string& what) {
    if (problem_.empty()) problem_ = "call " + std::to_string(log_.size()) + ": " + what;
  }

  // Redis's TTL expiry, replayed on the pinned clock.
  void expire_due_keys() {
    std::vector<std::string> due = {"DEL"};
    for (auto it = deadlines_.begin(); it != deadlines_.end();) {
      if (it->second <= clock_.now()) {
        due.push_back(it->first);
        values_[it->first] = std::nullopt;
        it = deadlines_.erase(it);
      } else {
        ++it;
      }
    }
    if (due.size() > 1) coverage_.expired_keys_deleted += static_cast<int>(due.size() - 1);
    if (due.size() > 1) (void)run_integer(client_, std::move(due));
  }

  void step() {
    // Time stays realistic (before 2033) however long the policy's durations are.
    clock_.set(std::min(clock_.now() + random_gap(rng_, longest_duration(limits_)), kLatestNow));
    if (clock_.now() < clock_floor_) clock_.set(clock_floor_);
    expire_due_keys();
    const std::size_t subject = static_cast<std::size_t>(uniform(rng_, 0, 2));
    const SubjectRef r = subject_ref(subject);
    const std::vector<std::string> keys = keys_of(subject);
    std::ostringstream call;
    call << "t=+" << clock_.now() - start_ << " subject " << subject << ": ";

    bool must_not_write = false;  // denied, peeked or inspected: Redis must not change
    bool must_set_ttl = false;    // allowed with cost > 0: every limit's key written
    bool after_reset = false;
    bool emptied = false;  // a refund: see QuotaOutcome::may_empty
    const std::int64_t kind = uniform(rng_, 0, 99);
    if (chargeable_ && kind < 35) {
      const QuotaOutcome outcome = compare_quota(r, subject, call);
      must_not_write = !outcome.may_write;
      must_set_ttl = outcome.writes_every_limit;
      emptied = outcome.may_empty;
    } else if (kind < 60 || leases_.empty()) {
      const std::int64_t cost = random_cost(rng_, largest_grant(limits_));
      if (kind >= 96) {
        call << "inspect";
        must_not_write = true;
        ++coverage_.inspects;
        compare_inspect(r, cost, call);
      } else if (kind >= 94) {
        call << "reset";
        ++coverage_.resets;
        after_reset = true;
        const Status m = memory_.reset(r);
        const Status x = redis_.reset(r);
        if (!m.ok() || !x.ok()) fail("reset failed: " + m.to_string() + " / " + x.to_string());
      } else {
        call << "acquire cost=" << cost;
        const bool allowed = compare_acquire(r, cost, subject, call);
        must_not_write = !allowed || cost == 0;
        must_set_ttl = !must_not_write;
      }
    } else {
      // Mostly recent leases (likely live), sometimes any (likely released or expired).
      const auto count = static_cast<std::int64_t>(leases_.size());
      const std::int64_t oldest = chance(rng_, 0.7) ? std::max<std::int64_t>(0, count - 3) : 0;
      LeasePair& lease = leases_[static_cast<std::size_t>(uniform(rng_, oldest, count - 1))];
      const SubjectRef lease_ref = subject_ref(lease.subject);
      const bool release = kind < 80;
      call << (release ? "release" : "renew") << " lease of subject " << lease.subject;
      const StatusOr<bool> m =
          release
              ? store::lease_now(memory_, lease_ref, store::LeaseOperation::kRelease, lease.memory)
              : store::lease_now(memory_, lease_ref, store::LeaseOperation::kRenew, lease.memory);
      const StatusOr<bool> x =
          release
              ? store::lease_now(redis_, lease_ref, store::LeaseOperation::kRelease, lease.redis)
              : store::lease_now(redis_, lease_ref, store::LeaseOperation::kRenew, lease.redis);
      if (!m.ok() || !x.ok()) {
        fail("lease call failed: " + m.status().to_string() + " / " + x.status().to_string());
      } else {
        call << " -> memory " << *m << ", redis " << *x;
        if (*m) ++(release ? coverage_.leases_freed : coverage_.leases_renewed);
        if (*m != *x)
          fail("lease result differs: memory " + std::to_string(*m) + ", redis " +
               std::to_string(*x));
      }
      log_.push_back(call.str());
      const Micros floor_before = clock_floor_;
      check_keys(lease_ref, keys_of(lease.subject), /*must_not_write=*/false,
                 /*must_set_ttl=*/false);
      // Inspects come only while no lease is held: the listing is compared here too, once
      // check_keys took the keys over. A renewal's TTL of a ms or two can run out in real time
      // before that (a loaded machine): check_keys then moved clock_floor_ past the state's life,
      // and the listing of a key gone early cannot match this call's pinned instant.
      if (clock_floor_ == floor_before) {
        compare_leases(lease_ref, call);
        log_.back() = call.str();
      }
      return;
    }
    log_.push_back(call.str());
    check_keys(r, keys, must_not_write, must_set_ttl, after_reset, emptied);
  }

  struct QuotaOutcome {
    bool may_write = true;
    bool writes_every_limit = false;  // a charge of cost > 0 that fit: every key gets a TTL
    // A refund or settle: it may delete a state back to unused (a full bucket reads as a new one,
    // which may hold only its `initial` tokens), and keeps an emptied fixed window's key until
    // the window ends.
    bool may_empty = false;
  };

  // A random charge, refund, reserve or settle (docs/quotas.md), on both stores.
  QuotaOutcome compare_quota(const SubjectRef& r, std::size_t subject, std::ostringstream& call) {
    QuotaRequest request{.cost = random_cost(rng_, largest_grant(limits_)), .max_debt = max_debt_};
    std::string id;
    const std::int64_t pick = uniform(rng_, 0, 9);
    if (pick < 4) {
      request.operation = QuotaOperation::kCharge;
    } else if (pick < 6) {
      request.operation = QuotaOperation::kRefund;
    } else if (std::vector<std::string>& held = reservations_[subject]; pick < 8 || held.empty()) {
      request.operation = QuotaOperation::kReserve;
      request.cost = std::max<std::int64_t>(1, request.cost);  // a reserve of 0 is refused
      id = "res-" + std::to_string(held.size());
      request.reservation_ttl =
          chance(rng_, 0.5) ? std::min(random_duration(rng_), kMaxReservationTtl)
                            : uniform(rng_, std::min(longest_duration(limits_), kMaxReservationTtl),
                                      kMaxReservationTtl);
      held.push_back(id);
    } else {  // mostly a recent one; sometimes one settled or expired already
      const auto count = static_cast<std::int64_t>(held.size());
      const std::int64_t oldest = chance(rng_, 0.7) ? std::max<std::int64_t>(0, count - 2) : 0;
      request.operation = QuotaOperation::kSettle;
      id = held[static_cast<std::size_t>(uniform(rng_, oldest, count - 1))];
    }
    request.reservation = id;
    static constexpr const char* kNames[] = {"charge", "refund", "reserve", "settle"};
    const char* name = kNames[static_cast<int>(request.operation)];
    call << name << " cost=" << request.cost << " max_debt=" << max_debt_ << " " << id;
    const StatusOr<Decision> m = store::apply_quota_now(memory_, r, request);
    const StatusOr<Decision> x = store::apply_quota_now(redis_, r, request);
    // A reservation key's TTL runs in real time, its stored expiry on the pinned clock: the test
    // takes the key over, as it does the limit keys, so that only the latter decides.
    std::string reservation = documented_key(policy_, subjects_[subject], 0);
    reservation.back() = 'r';
    (void)run_integer(client_, {"PERSIST", reservation + ":" + id});
    if (m.ok() != x.ok() || (!m.ok() && m.status().code() != x.status().code())) {
      fail(std::string(name) + " answered differently: memory " + m.status().to_string() +
           ", redis " + x.status().to_string());
      return {};
    }
    if (!m.ok()) {
      if (m.status().code() != StatusCode::kNotFound)
        fail("quota failed: " + m.status().to_string());
      call << " -> " << m.status().to_string();
      ++coverage_.quota[std::string(name) + " not found"];
      return {.may_write = false};
    }
    call << " -> " << show(m->verdict) << " limit_index=" << m->limit_index;
    if (m->verdict != x->verdict || m->limit_index != x->limit_index) {
      fail(std::string(name) + " decided differently:\n  memory " + show(m->verdict) +
           " limit_index=" + std::to_string(m->limit_index) + "\n  redis  " + show(x->verdict) +
           " limit_index=" + std::to_string(x->limit_index));
    }
    const bool charged = request.operation == QuotaOperation::kCharge ||
                         request.operation == QuotaOperation::kReserve;
    ++coverage_.quota[std::string(name) + (m->verdict.allowed ? " allowed" : " refused")];
    if (charged && !m->verdict.allowed) return {.may_write = false};
    return {.may_write = true,
            .writes_every_limit = charged && request.cost > 0,
            .may_empty = !charged};
  }

  // Returns whether the request was allowed (by memory, the reference).
  bool compare_acquire(const SubjectRef& r, std::int64_t cost, std::size_t subject,
                       std::ostringstream& call) {
    const StatusOr<Decision> m = store::acquire_now(memory_, r, cost);
    const StatusOr<Decision> x = store::acquire_now(redis_, r, cost);
    if (!m.ok() || !x.ok()) {
      fail("acquire failed: " + m.status().to_string() + " / " + x.status().to_string());
      return false;
    }
    call << " -> " << show(m->verdict) << " limit_index=" << m->limit_index;
    if (m->verdict != x->verdict || m->limit_index != x->limit_index) {
      fail("acquire cost=" + std::to_string(cost) + " decided differently:\n  memory " +
           show(m->verdict) + " limit_index=" + std::to_string(m->limit_index) + "\n  redis  " +
           show(x->verdict) + " limit_index=" + std::to_string(x->limit_index));
    }
    if (m->lease.has_value() != x->lease.has_value()) fail("lease given by only one store");
    const Verdict& verdict = m->verdict;
    if (cost == 0) {
      ++coverage_.peeks;
    } else if (verdict.allowed) {
      ++coverage_.allowed[show(limits_[0]).substr(0, show(limits_[0]).find('{'))];
    } else {
      ++(verdict.retry_after ? coverage_.denied_with_retry : coverage_.denied_never);
    }
    if (m->lease && x->lease) {
      leases_.push_back({.memory = *m->lease, .redis = *x->lease, .subject = subject});
    }
    return m->verdict.allowed;
  }

  // A peek, a dry run of `cost` and the lease listing: each must agree and write nothing.
  void compare_inspect(const SubjectRef& r, std::int64_t cost, std::ostringstream& call) {
    const StatusOr<std::vector<Verdict>> m = memory_.inspect(r);
    const StatusOr<std::vector<Verdict>> x = redis_.inspect(r);
    if (!m.ok() || !x.ok()) {
      fail("inspect failed: " + m.status().to_string() + " / " + x.status().to_string());
      return;
    }
    for (std::size_t i = 0; i < m->size() && i < x->size(); ++i) {
      call << " [" << i << "] " << show((*m)[i]);
      if ((*m)[i] != (*x)[i]) {
        fail("inspect of limit " + std::to_string(i) + " differs:\n  memory " + show((*m)[i]) +
             "\n  redis  " + show((*x)[i]));
      }
    }
    if (m->size() != x->size()) fail("inspect returned different counts");
    compare_dry_run(r, cost, call);
    compare_leases(r, call);
  }

  void compare_dry_run(const SubjectRef& r, std::int64_t cost, std::ostringstream& call) {
    const StatusOr<DryRun> m = memory_.dry_run(r, cost);
    const StatusOr<DryRun> x = redis_.dry_run(r, cost);
    if (!m.ok() || !x.ok()) {
      return fail("dry run failed: " + m.status().to_string() + " / " + x.status().to_string());
    }
    call << " dry run cost=" << cost << " -> " << show(m->policy.verdict);
    if (m->limits != x->limits || m->policy.verdict != x->policy.verdict ||
        m->policy.limit_index != x->policy.limit_index) {
      fail("dry run cost=" + std::to_string(cost) + " differs:\n  memory " +
           show(m->policy.verdict) + "\n  redis  " + show(x->policy.verdict));
    }
    if (cost > 0 && !m->policy.verdict.allowed && m->policy.verdict.retry_after) {
      ++coverage_.dry_runs_with_retry;
    }
  }

  // Lease ids differ between the stores: Redis's are mapped to memory's through leases_.
  void compare_leases(const SubjectRef& r, std::ostringstream& call) {
    for (const std::size_t max : {std::size_t{1}, std::size_t{1000}}) {
      const StatusOr<std::vector<LimitLeases>> m = memory_.leases(r, max);
      StatusOr<std::vector<LimitLeases>> x = redis_.leases(r, max);
      if (!m.ok() || !x.ok()) {
        return fail("leases failed: " + m.status().to_string() + " / " + x.status().to_string());
      }
      for (LimitLeases& listed : *x) {
        for (HeldLease& lease : listed.leases) {
          for (const LeasePair& pair : leases_) {
            if (pair.redis == lease.id) lease.id = pair.memory;
          }
        }
        // Ties in expiry are ordered by id, which the mapping does not keep.
        std::sort(listed.leases.begin(), listed.leases.end(), [](const auto& a, const auto& b) {
          return std::tie(a.expires_after, a.id) < std::tie(b.expires_after, b.id);
        });
      }
      if (max == 1) {
        // Capped: the full counts, and the soonest expiry (of tied leases each store lists the
        // one whose id is first, and the ids differ).
        const auto summary = [](const std::vector<LimitLeases>& listing) {
          std::vector<std::tuple<std::size_t, std::size_t, std::int64_t, std::size_t, Micros>> out;
          for (const LimitLeases& l : listing) {
            out.emplace_back(l.limit_index, l.count, l.units, l.leases.size(),
                             l.leases.empty() ? 0 : l.leases[0].expires_after);
          }
          return out;
        };
        if (summary(*m) != summary(*x)) fail("capped lease listings differ");
        continue;
      }
      for (const LimitLeases& listed : *m) {
        coverage_.leases_listed += static_cast<int>(listed.leases.size());
        call << " leases of limit " << listed.limit_index << ": " << listed.count;
      }
      if (*m != *x) fail("lease listings (max " + std::to_string(max) + ") differ");
    }
  }

  // After a call: a key changed only by a call allowed to write; every key has a TTL or is one
  // the test already took over; a fresh TTL is exactly the state's life (the memory store's
  // reset_after) in ms rounded up. The call ran between the previous snapshot's Redis clock
  // reading and this one's, which bounds the TTL it set from both sides; within one millisecond
  // (most calls) the check is exact.
  void check_keys(const SubjectRef& r, const std::vector<std::string>& keys, bool must_not_write,
                  bool must_set_ttl, bool after_reset = false, bool emptied = false) {
    const Snapshot after = snapshot(client_, keys, /*persist=*/true);
    const std::int64_t ran_after_ms = last_redis_ms_;
    const std::int64_t ran_before_ms = after.redis_ms;
    last_redis_ms_ = after.redis_ms;
    const StatusOr<std::vector<Verdict>> life = memory_.inspect(r);
    if (!life.ok()) return fail("memory inspect failed: " + life.status().to_string());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const std::string& key = keys[i];
      const std::string limit = "key of limit " + std::to_string(i);
      const auto known = values_.find(key);
      const std::optional<std::string> previous =
          known == values_.end() ? std::nullopt : known->second;
      const KeySnapshot& now = after.keys[i];
      if (must_not_write && (now.value != previous || now.expires_at_ms >= 0)) {
        fail(limit + " changed by a call that must not write" +
             (previous ? "" : " (it did not exist before)"));
      }
      Micros state_life = (*life)[i].reset_after;
      // A refund that empties a fixed window keeps its key until the window's end (quota.lua).
      const auto* fixed = std::get_if<FixedWindow>(&limits_[i]);
      const bool kept_empty = emptied && state_life == 0 && fixed != nullptr;
      if (kept_empty) state_life = fixed->window - clock_.now() % fixed->window;
      const std::int64_t life_ms = std::max<std::int64_t>(1, ceil_ms(state_life));
      // A key that existed (or was just written) and is gone, though its state still lives: lost
      // (a reset legitimately forgets a state that may still have life, e.g. a warm-up bucket).
      if (now.expires_at_ms == -2 && state_life > 0 && !after_reset && !emptied &&
          (previous || must_set_ttl)) {
        if (life_ms <= ran_before_ms - ran_after_ms) {
          // A TTL of a millisecond or two ran out in real time before the test could take the
          // key over. The state is gone early; skipping pinned time past its life keeps that
          // unobservable.
          clock_floor_ = std::max(clock_floor_, clock_.now() + state_life);
        } else {
          fail(limit + " is gone while its state lives " + std::to_string(state_life) + " µs");
        }
      }
      // A fixed window written again in its window keeps the TTL it got (SET … KEEPTTL): the
      // TTL the test took over must then still run to the state's end, within the ms it was
      // rounded up to.
      const auto deadline = deadlines_.find(key);
      const bool kept_ttl_runs_to_state_end =
          deadline != deadlines_.end() && deadline->second >= clock_.now() + state_life &&
          deadline->second < clock_.now() + state_life + kMicrosPerMilli;
      if (must_set_ttl && now.expires_at_ms == -1 && !kept_ttl_runs_to_state_end) {
        fail(limit + " written without a new TTL");
      }
      if (now.expires_at_ms == -1 && !previous) fail(limit + " was created without a TTL");
      if (now.expires_at_ms >= 0) {
        // The TTL set was expires_at - (Redis's clock when the call ran), that clock being in
        // [ran_after_ms, ran_before_ms].
        const std::int64_t longest_set = now.expires_at_ms - ran_after_ms;
        const std::int64_t shortest_set = now.expires_at_ms - ran_before_ms;
        if (longest_set < life_ms || shortest_set > life_ms) {
          fail(limit + " got a TTL of " + std::to_string(shortest_set) + ".." +
               std::to_string(longest_set) + " ms; its state lives " + std::to_string(state_life) +
               " µs, so " + std::to_string(life_ms) + " ms rounded up");
        }
        deadlines_[key] = clock_.now() + life_ms * kMicrosPerMilli;
      }
      if (now.expires_at_ms == -2) deadlines_.erase(key);
      values_[key] = now.value;
    }
  }

  Rng rng_;
  std::uint64_t seed_;
  RedisStore& redis_;
  redis::Multiplexer& client_;
  ManualClock& clock_;
  Coverage& coverage_;
  MemoryStore memory_;
  Micros start_ = clock_.now();
  std::string policy_;
  std::vector<Limit> limits_;
  std::vector<std::string> subjects_;
  std::vector<LeasePair> leases_;
  bool chargeable_ = false;  // no concurrency limit: quota operations apply
  std::int64_t max_debt_ = 0;
  std::map<std::size_t, std::vector<std::string>> reservations_;  // ids by subject
  Micros clock_floor_ = 0;                                        // see check_keys
  std::int64_t last_redis_ms_ = snapshot(client_, {}, false).redis_ms;
  std::map<std::string, Micros> deadlines_;                   // pinned instant Redis drops it
  std::map<std::string, std::optional<std::string>> values_;  // last DUMP seen
  std::vector<std::string> log_;
  std::string problem_;
};

// One server shared by the tests that don't stop, block or reconfigure it.
class RedisStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = start_server().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr) << "redis-server did not start";
    client_ = make_client(server_->port());
    ASSERT_NE(client_, nullptr);
    ASSERT_TRUE(run(*client_, {"FLUSHALL"}).is_status());
  }

  static RedisServer* server_;
  std::shared_ptr<redis::Multiplexer> client_;
};

RedisServer* RedisStoreTest::server_ = nullptr;

// SLUICE_DIFFERENTIAL_SEED and SLUICE_DIFFERENTIAL_SEQUENCES explore beyond the fixed default.
std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::strtoull(value, nullptr, 10) : fallback;
}

Coverage run_differential(redis::Multiplexer& client, const GeneratorOptions& options) {
  const std::uint64_t base_seed = env_or("SLUICE_DIFFERENTIAL_SEED", 20'240'611);
  const std::uint64_t sequences = env_or("SLUICE_DIFFERENTIAL_SEQUENCES", 300);
  constexpr int kOperations = 40;
  ManualClock clock(kEpoch);
  RedisStore redis_store(std::shared_ptr<redis::Multiplexer>(&client, [](redis::Multiplexer*) {}),
                         {.pinned_clock_for_tests = &clock, .reservations = kEveryReservationTtl});
  Coverage coverage;
  int failures = 0;
  for (std::uint64_t i = 0; i < sequences && failures < 5; ++i) {
    const std::uint64_t seed = base_seed + i;
    Rng start(seed);
    clock.set(kEpoch + uniform(start, 0, kMicrosPerDay));
    Differential sequence(seed, i, options, redis_store, client, clock, coverage);
    if (!sequence.run(kOperations)) {
      ++failures;
      ADD_FAILURE() << sequence.report();
    }
  }
  return coverage;
}

TEST_F(RedisStoreTest, DecidesFieldForFieldLikeTheMemoryStoreOnRandomSequences) {
  const Coverage coverage = run_differential(*client_, {});
  for (const char* algorithm : {"token_bucket", "gcra", "leaky_bucket", "fixed_window",
                                "sliding_window", "sliding_log", "concurrency"}) {
    EXPECT_GE(coverage.allowed.count(algorithm) ? coverage.allowed.at(algorithm) : 0, 200)
        << algorithm;
  }
  // About a third of what the default seed reaches.
  EXPECT_GE(coverage.denied_with_retry, 300);
  EXPECT_GE(coverage.denied_never, 1000);
  EXPECT_GE(coverage.peeks, 800);
  EXPECT_GE(coverage.inspects, 200);
  EXPECT_GE(coverage.dry_runs_with_retry, 10);
  EXPECT_GE(coverage.leases_listed, 10);
  EXPECT_GE(coverage.resets, 90);
  EXPECT_GE(coverage.leases_freed, 35);
  EXPECT_GE(coverage.leases_renewed, 30);
  EXPECT_GE(coverage.expired_keys_deleted, 3000);
  // Quota operations (charge, refund, reserve, settle), about a third of the default seed's.
  for (const auto& [what, least] : std::map<std::string, int>{{"charge allowed", 400},
                                                              {"charge refused", 100},
                                                              {"refund allowed", 200},
                                                              {"reserve allowed", 250},
                                                              {"reserve refused", 60},
                                                              {"settle allowed", 30},
                                                              {"settle not found", 80}}) {
    EXPECT_GE(coverage.quota.count(what) ? coverage.quota.at(what) : 0, least) << what;
  }
}

// The same sequences through Redis Functions (script_engine.h): the function library holds the
// very scripts, so every decision, field for field, is the memory store's too.
TEST_F(RedisStoreTest, DecidesFieldForFieldLikeTheMemoryStoreThroughRedisFunctions) {
  redis::MultiplexerOptions options;
  options.engine = {.probe = true,
                    .choice = redis::EngineChoice::kFunctions,
                    .clock = redis::ScriptClock::kCaller,
                    .library = store_function_library(true)};
  const std::shared_ptr<redis::Multiplexer> functions = make_client(server_->port(), options);
  ASSERT_NE(functions, nullptr);
  ASSERT_TRUE(wait_until_answering(*functions));

  const Coverage coverage = run_differential(*functions, {});
  for (const char* algorithm : {"token_bucket", "gcra", "leaky_bucket", "fixed_window",
                                "sliding_window", "sliding_log", "concurrency"}) {
    EXPECT_GE(coverage.allowed.count(algorithm) ? coverage.allowed.at(algorithm) : 0, 200)
        << algorithm;
  }
  EXPECT_GE(coverage.quota.count("charge allowed") ? coverage.quota.at("charge allowed") : 0, 400);
  // Every store script call was an FCALL (the test's own snapshot script, not in the library,
  // went as EVALSHA without trying FCALL first).
  const std::string after = run(*client_, {"INFO", "commandstats"}).as_string();
  EXPECT_NE(after.find("cmdstat_fcall"), std::string::npos);
  EXPECT_EQ(functions->stats().engine_fallbacks, 0U);
}

#ifdef SLUICE_MODULE_PATH
// The same sequences through the sluice module (docs/redis-module.md), loaded with its test-only
// pinned clock: decisions, leases and the penalty box field for field as the memory store's.
// Quota calls stay scripts (the module has no SLUICE.QUOTA yet).
TEST(RedisStoreModuleTest, DecidesFieldForFieldLikeTheMemoryStoreThroughTheModule) {
  StatusOr<std::unique_ptr<RedisServer>> server =
      RedisServer::start({.extra_args = {"--loadmodule", SLUICE_MODULE_PATH, "pinned-clock"}});
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  redis::MultiplexerOptions options;
  options.engine = {.probe = true,
                    .choice = redis::EngineChoice::kModule,
                    .clock = redis::ScriptClock::kCaller,
                    .module_reads_caller_time = true};
  const std::shared_ptr<redis::Multiplexer> module = make_client((*server)->port(), options);
  ASSERT_NE(module, nullptr);
  ASSERT_TRUE(wait_until_answering(*module));

  const Coverage coverage = run_differential(*module, {});
  for (const char* algorithm : {"token_bucket", "gcra", "leaky_bucket", "fixed_window",
                                "sliding_window", "sliding_log", "concurrency"}) {
    EXPECT_GE(coverage.allowed.count(algorithm) ? coverage.allowed.at(algorithm) : 0, 200)
        << algorithm;
  }
  EXPECT_GE(coverage.leases_freed, 35);
  const std::string stats = run(*module, {"INFO", "commandstats"}).as_string();
  EXPECT_NE(stats.find("cmdstat_sluice.evaluate"), std::string::npos);
  EXPECT_EQ(module->stats().engine_fallbacks, 0U);
}
#endif

// Parameters at the edge of what validation accepts (found discrepancy B before validation got
// its 100-year horizon). Slower to generate, so not part of the default run. Not a copy of the
// enabled run above: 30 % of its limits are extreme_limit's, which no enabled test draws.
// Disabled also because it fails today (issue 33, November 2026): with the reservation TTLs
// clamped to kMaxReservationTtl, seed 20240886 finds a quota charge on a leaky bucket of
// period ~1.9e15 µs that memory decides and Redis answers Internal ("unexpected script reply of
// 56 bytes"): a discrepancy to fix in the stores, not in this test.
TEST_F(RedisStoreTest, DISABLED_DecidesLikeTheMemoryStoreWithParametersAtTheEdgeOfValidation) {
  run_differential(*client_, {.edge_of_validation = true});
}

// Discrepancy A, minimal: a peek must change nothing (DESIGN.md §2), so a cost-2 request at +25 s
// gets the same answer with or without a peek at +20 s. The fixed window keeps the subject's
// entry alive in MemoryStore, whose refresh() then rewrites the expired bucket's initial state
// (1 token, anchored at the peek) in place: memory answers retry_after 5 s after the peek and
// 10 s without it. Redis answers 10 s both times.
TEST_F(RedisStoreTest, APeekDoesNotRestartAnExpiredWarmUpBucketInEitherStore) {
  const std::vector<Limit> limits = {
      TokenBucket{.capacity = 2, .refill = 1, .period = 10 * kMicrosPerSecond, .initial = 1},
      FixedWindow{.limit = 100, .window = kMicrosPerHour}};
  for (const bool peek : {false, true}) {
    SCOPED_TRACE(peek ? "with a peek at +20 s" : "without the peek");
    ASSERT_TRUE(run(*client_, {"FLUSHALL"}).is_status());
    ManualClock clock(kEpoch);
    MemoryStore memory(clock);
    RedisStore redis_store(client_, {.pinned_clock_for_tests = &clock});
    for (Store* store : {static_cast<Store*>(&memory), static_cast<Store*>(&redis_store)}) {
      SCOPED_TRACE(store == &memory ? "memory" : "redis");
      clock.set(kEpoch);
      ASSERT_TRUE(store::acquire_now(*store, ref(limits, "s"), 1)->verdict.allowed);
      clock.set(kEpoch + 20 * kMicrosPerSecond);  // the bucket's state expires: full again
      if (peek) {
        ASSERT_TRUE(store::acquire_now(*store, ref(limits, "s"), 0).ok());
      }
      clock.set(kEpoch + 25 * kMicrosPerSecond);
      const StatusOr<Decision> decision = store::acquire_now(*store, ref(limits, "s"), 2);
      ASSERT_TRUE(decision.ok());
      EXPECT_FALSE(decision->verdict.allowed);
      // A subject without state starts at `initial` = 1 token: 2 tokens are 10 s away.
      EXPECT_EQ(decision->verdict.retry_after, 10 * kMicrosPerSecond);
    }
  }
}

// Discrepancy B: Lua's doubles hold every integer only below 2^53, so every instant a state can
// reach (now + the longest life of the state) must stay below it (≈ year 2255). Validation must
// refuse parameters that break this; whatever it accepts, both stores decide alike. (Without a
// horizon check validation accepted all of these and Redis answered reset_after ± 1.)
TEST_F(RedisStoreTest, LimitsWhoseStateWouldPass2To53AreRefusedOrDecidedAlike) {
  constexpr std::int64_t kTop = kMaxExactInteger - 1;
  const std::vector<Limit> edges = {
      Concurrency{.limit = 1, .lease_ttl = kTop - 936},
      SlidingLog{.limit = 2, .window = kTop - 658},
      SlidingWindow{.limit = 1, .window = kTop / 2},
      FixedWindow{.limit = 1, .window = kTop - 1},
      Gcra{.rate = 1, .period = (kTop - 1) / 7, .burst = 6},
      TokenBucket{.capacity = 3, .refill = 1, .period = (kTop - 1) / 3},
      TokenBucket{.capacity = 2,
                  .refill = 1,
                  .period = (kTop - 1) / 2,
                  .refill_mode = RefillMode::kInterval},
      LeakyBucket{.rate = 1, .period = 1'374'468'654'413'269, .max_delay = kTop - 1}};
  for (const Limit& limit : edges) {
    SCOPED_TRACE(show(limit));
    if (!algorithm::validate_limit(limit, "limits[0]").empty()) continue;  // refused: fine
    const std::vector<Limit> limits = {limit};
    ManualClock clock(kEpoch);  // even, so an odd life gives an odd instant past 2^53
    MemoryStore memory(clock);
    RedisStore redis_store(client_, {.pinned_clock_for_tests = &clock});
    for (const std::int64_t cost : {1, 1, 2}) {
      const StatusOr<Decision> m = store::acquire_now(memory, ref(limits, "s"), cost);
      const StatusOr<Decision> x = store::acquire_now(redis_store, ref(limits, "s"), cost);
      ASSERT_TRUE(m.ok() && x.ok());
      EXPECT_EQ(x->verdict, m->verdict)
          << "memory " << show(m->verdict) << "\nredis  " << show(x->verdict);
      clock.advance(1);
    }
  }
}

// Discrepancy B', what a horizon on parameters alone cannot catch: an idle leaky bucket admitted
// any cost whose cost·period was below 2^53, and the queue's TAT then landed at now + 8.0e15, past
// 2^53, where Lua rounds. Fixed: a cost whose emission time passes the 100-year horizon is never
// granted, in both stores.
TEST_F(RedisStoreTest, ALeakyBucketAdmittingAHugeCostStaysExact) {
  const std::vector<Limit> limits = {LeakyBucket{.rate = 1, .period = 10'000'001, .max_delay = 0}};
  ASSERT_TRUE(algorithm::validate_limit(limits[0], "limits[0]").empty());
  ManualClock clock(kEpoch);
  MemoryStore memory(clock);
  RedisStore redis_store(client_, {.pinned_clock_for_tests = &clock});
  for (const std::int64_t cost : {800'000'001, 1}) {
    const StatusOr<Decision> m = store::acquire_now(memory, ref(limits, "s"), cost);
    const StatusOr<Decision> x = store::acquire_now(redis_store, ref(limits, "s"), cost);
    ASSERT_TRUE(m.ok() && x.ok());
    EXPECT_EQ(x->verdict, m->verdict)
        << "cost " << cost << "\nmemory " << show(m->verdict) << "\nredis  " << show(x->verdict);
    clock.advance(1);
  }
}

// ---- 2. races between processes and threads on Redis's own clock ------------------------------

struct RaceCase {
  std::string name;
  std::vector<Limit> limits;
  int processes = 3;
  int threads = 16;              // per process
  int requests_per_thread = 25;  // each of cost 1; leases are never released
  std::int64_t expected = 0;     // admitted in total, exactly
};

void PrintTo(const RaceCase& c, std::ostream* out) { *out << c.name << " " << show(c.limits); }

// Durations long enough that nothing refills, slides or expires during a run of seconds.
std::vector<RaceCase> race_cases(const std::string& prefix, std::int64_t limit, int processes,
                                 int threads, int requests) {
  constexpr Micros kTenYears = 3650 * kMicrosPerDay;  // next boundary is in 2030
  const std::vector<std::pair<std::string, Limit>> limits = {
      {"fixed_window", FixedWindow{.limit = limit, .window = kTenYears}},
      {"sliding_window", SlidingWindow{.limit = limit, .window = kMicrosPerDay}},
      {"sliding_log", SlidingLog{.limit = limit, .window = kMicrosPerHour}},
      {"token_bucket", TokenBucket{.capacity = limit, .refill = 1, .period = kMicrosPerHour}},
      {"token_bucket_interval", TokenBucket{.capacity = limit,
                                            .refill = 1,
                                            .period = kMicrosPerHour,
                                            .refill_mode = RefillMode::kInterval}},
      {"gcra", Gcra{.rate = 1, .period = kMicrosPerHour, .burst = limit - 1}},
      {"leaky_bucket",
       LeakyBucket{.rate = 1, .period = kMicrosPerHour, .max_delay = (limit - 1) * kMicrosPerHour}},
      {"concurrency", Concurrency{.limit = limit, .lease_ttl = kMicrosPerHour}},
  };
  std::vector<RaceCase> cases;
  for (const auto& [name, one] : limits) {
    cases.push_back({.name = prefix + "_" + name,
                     .limits = {one},
                     .processes = processes,
                     .threads = threads,
                     .requests_per_thread = requests,
                     .expected = limit});
  }
  return cases;
}

struct ChildResult {
  std::int64_t admitted = 0;
  std::int64_t errors = 0;
  char first_error[160] = {};
};

bool read_all(int fd, void* data, std::size_t size, int timeout_ms) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return false;
    const ssize_t n = ::read(fd, bytes, size);
    if (n <= 0) return false;
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// In a forked child: its own client and store, `threads` threads released together when the
// parent closes the `go` pipe, every admitted request counted. Never returns.
[[noreturn]] void race_child(std::uint16_t port, const RaceCase& c, int ready_fd, int go_fd,
                             int result_fd) {
  ChildResult result;
  {
    std::shared_ptr<redis::Multiplexer> client;
    if (StatusOr<std::unique_ptr<redis::Multiplexer>> made =
            redis::Multiplexer::create({.port = port});
        made.ok()) {
      client = std::move(*made);
    }
    if (client == nullptr || !wait_until_answering(*client)) ::_exit(2);
    RedisStore store(client);
    std::latch started(c.threads);
    std::atomic<bool> go{false};
    std::atomic<std::int64_t> admitted{0};
    std::atomic<std::int64_t> errors{0};
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int t = 0; t < c.threads; ++t) {
      threads.emplace_back([&] {
        started.count_down();
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (int i = 0; i < c.requests_per_thread; ++i) {
          const StatusOr<Decision> decision =
              store::acquire_now(store, ref(c.limits, "hot", "race"), 1);
          if (!decision.ok()) {
            if (errors++ == 0) {
              std::lock_guard lock(mu);
              std::snprintf(result.first_error, sizeof result.first_error, "%s",
                            decision.status().to_string().c_str());
            }
          } else if (decision->verdict.allowed) {
            ++admitted;
          }
        }
      });
    }
    started.wait();
    char byte = 'r';
    if (::write(ready_fd, &byte, 1) != 1) ::_exit(3);
    while (::read(go_fd, &byte, 1) > 0) {
    }  // EOF: the parent released everyone
    go.store(true, std::memory_order_release);
    for (std::thread& thread : threads) thread.join();
    result.admitted = admitted.load();
    result.errors = errors.load();
  }
  const bool written = ::write(result_fd, &result, sizeof result) == sizeof result;
  ::_exit(written ? 0 : 4);
}

std::string race_case_name(const testing::TestParamInfo<RaceCase>& param) {
  return param.param.name;
}

class RedisStoreRaceTest : public ::testing::TestWithParam<RaceCase> {
 protected:
  static void SetUpTestSuite() { server_ = start_server().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static RedisServer* server_;
};

RedisServer* RedisStoreRaceTest::server_ = nullptr;

TEST_P(RedisStoreRaceTest, ProcessesAndThreadsRacingOnOneKeyAdmitExactlyTheLimit) {
  ASSERT_NE(server_, nullptr);
  const RaceCase& c = GetParam();
  ASSERT_TRUE(algorithm::validate_limit(c.limits[0], "limits[0]").empty());
  {  // No client may be alive in this process while it forks (its I/O thread would be lost).
    std::shared_ptr<redis::Multiplexer> client = make_client(server_->port());
    ASSERT_NE(client, nullptr);
    ASSERT_TRUE(run(*client, {"FLUSHALL"}).is_status());
  }
  int ready[2], go[2], results[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(results), 0);
  std::fflush(nullptr);
  std::vector<pid_t> children;
  for (int p = 0; p < c.processes; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << std::strerror(errno);
    if (pid == 0) {
      ::close(go[1]);
      ::close(ready[0]);
      ::close(results[0]);
      race_child(server_->port(), c, ready[1], go[0], results[1]);
    }
    children.push_back(pid);
  }
  ::close(ready[1]);
  ::close(go[0]);
  ::close(results[1]);
  constexpr int kTimeoutMs = 60'000;
  bool all_ready = true;
  for (std::size_t i = 0; i < children.size() && all_ready; ++i) {
    char byte = 0;
    all_ready = read_all(ready[0], &byte, 1, kTimeoutMs);
  }
  ::close(go[1]);  // every child sees EOF at once: the barrier opens
  std::int64_t admitted = 0;
  std::int64_t errors = 0;
  std::string first_error;
  bool all_reported = all_ready;
  for (std::size_t i = 0; i < children.size() && all_reported; ++i) {
    ChildResult result;
    all_reported = read_all(results[0], &result, sizeof result, kTimeoutMs);
    admitted += result.admitted;
    errors += result.errors;
    if (first_error.empty()) first_error = result.first_error;
  }
  for (const pid_t pid : children) {
    if (!all_reported) ::kill(pid, SIGKILL);  // only our own children, by PID
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(all_reported && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child " << pid << " status " << status;
  }
  ::close(ready[0]);
  ::close(results[0]);
  ASSERT_TRUE(all_reported) << "children did not report within " << kTimeoutMs << " ms";
  EXPECT_EQ(errors, 0) << first_error;
  EXPECT_EQ(admitted, c.expected) << c.processes * c.threads * c.requests_per_thread
                                  << " requests from " << c.processes << " processes x "
                                  << c.threads << " threads";
}

INSTANTIATE_TEST_SUITE_P(ManyRequests, RedisStoreRaceTest,
                         testing::ValuesIn(race_cases("limit200", 200, 3, 16, 10)), race_case_name);

// The seeds' attack (004): hundreds of clients released at the same instant against a limit of
// 5; a read-then-write limiter lets many through, an atomic one exactly 5.
INSTANTIATE_TEST_SUITE_P(ThreeHundredSimultaneousClients, RedisStoreRaceTest,
                         testing::ValuesIn(race_cases("limit5", 5, 3, 100, 1)), race_case_name);

// ---- 3. same-microsecond entries, crashed lease holders (time pinned) ---------------------------

TEST_F(RedisStoreTest, TwoRequestsInTheSameMicrosecondBothCountOnSlidingLog) {
  ManualClock clock(kEpoch);
  RedisStore store(client_, {.pinned_clock_for_tests = &clock});
  const std::vector<Limit> limits = {SlidingLog{.limit = 3, .window = kMicrosPerSecond}};
  const StatusOr<Decision> first = store::acquire_now(store, ref(limits, "same"), 1);
  const StatusOr<Decision> second = store::acquire_now(store, ref(limits, "same"), 1);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(first->verdict.allowed);
  EXPECT_EQ(first->verdict.remaining, 2);
  EXPECT_TRUE(second->verdict.allowed);
  EXPECT_EQ(second->verdict.remaining, 1);
  // A third at the same instant still fits (3 of 3); a fourth does not, until the window passes.
  EXPECT_TRUE(store::acquire_now(store, ref(limits, "same"), 1)->verdict.allowed);
  const StatusOr<Decision> fourth = store::acquire_now(store, ref(limits, "same"), 1);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(fourth->verdict.allowed);
  EXPECT_EQ(fourth->verdict.retry_after, kMicrosPerSecond);
  EXPECT_EQ(run_integer(*client_, {"ZCARD", documented_key("test.policy", "same", 0)}), 3);

  clock.advance(kMicrosPerSecond - 1);
  EXPECT_FALSE(store::acquire_now(store, ref(limits, "same"), 1)->verdict.allowed);
  clock.advance(1);  // all three entries leave the window together
  const StatusOr<std::vector<Verdict>> after = store.inspect(ref(limits, "same"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].remaining, 3);
}

// Decisions that wait at the same time share one script call (decision_batcher.h). Within a
// call they run one after the other, each seeing the writes of those before it: with the clock
// pinned, every decision of the run happens at one instant, so a call typically holds several
// decisions on the same key, and the sliding log several entries of the same microsecond.
TEST_F(RedisStoreTest, ConcurrentDecisionsShareScriptCallsAndEachIsExact) {
  ManualClock clock(kEpoch);
  RedisStore store(client_, {.pinned_clock_for_tests = &clock});
  struct Case {
    const char* name;
    std::vector<Limit> limits;
    std::int64_t admits;  // at one instant
  };
  const std::vector<Case> cases = {
      {"window", {FixedWindow{.limit = 50, .window = kMicrosPerHour}}, 50},
      {"log", {SlidingLog{.limit = 30, .window = kMicrosPerHour}}, 30},
      {"leases", {Concurrency{.limit = 7, .lease_ttl = kMicrosPerHour}}, 7},
      {"two",
       {Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 9},
        FixedWindow{.limit = 20, .window = kMicrosPerHour}},
       10}};
  constexpr int kThreads = 12;
  constexpr int kPerThread = 80;  // 20 per case: 240 per case in all, far above every limit
  std::mutex mu;
  std::map<std::string, std::vector<std::int64_t>> remaining;  // of each admitted decision
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const Case& c = cases[static_cast<std::size_t>(t + i) % cases.size()];
        const StatusOr<Decision> decision =
            store::acquire_now(store, ref(c.limits, "hot", c.name), 1);
        if (!decision.ok()) {
          ++errors;
        } else if (decision->verdict.allowed) {
          std::lock_guard lock(mu);
          remaining[c.name].push_back(decision->verdict.remaining);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors.load(), 0);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::int64_t>& seen = remaining[c.name];
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), c.admits);
    if (c.limits.size() == 1) {  // each admitted decision saw every earlier one: limit-1 ... 0
      std::sort(seen.begin(), seen.end());
      for (std::size_t k = 0; k < seen.size(); ++k)
        EXPECT_EQ(seen[k], static_cast<std::int64_t>(k));
    }
  }
  EXPECT_EQ(run_integer(*client_, {"ZCARD", documented_key("log", "hot", 0)}), 30);
  EXPECT_EQ(run_integer(*client_, {"HLEN", documented_key("leases", "hot", 0)}), 7);
  const DecisionBatchStats stats = store.batch_stats();
  EXPECT_EQ(stats.decisions, std::uint64_t{kThreads * kPerThread});
  EXPECT_LT(stats.calls, stats.decisions) << "no two decisions ever shared a script call";
}

// acquire_async: the same decisions, answered on the client's I/O thread, never inside the call;
// bad input is answered at once.
TEST_F(RedisStoreTest, AsyncAcquireDecidesLikeAcquireOnTheClientsThread) {
  for (const std::size_t max_batch : {std::size_t{64}, std::size_t{1}}) {
    SCOPED_TRACE("max_batch " + std::to_string(max_batch));
    ASSERT_TRUE(run(*client_, {"FLUSHALL"}).is_status());
    RedisStore store(client_, {.max_batch = max_batch});
    const std::vector<Limit> limits = {FixedWindow{.limit = 5, .window = kMicrosPerHour}};
    constexpr int kCalls = 40;
    std::latch answered(kCalls);
    std::mutex mu;
    std::vector<std::int64_t> remaining;
    int errors = 0;
    bool on_callers_thread = false;
    const std::thread::id caller = std::this_thread::get_id();
    for (int i = 0; i < kCalls; ++i) {
      store.acquire(ref(limits, "async"), 1, [&](StatusOr<Decision> decision) {
        {
          std::lock_guard lock(mu);
          if (std::this_thread::get_id() == caller) on_callers_thread = true;
          if (!decision.ok()) {
            ++errors;
          } else if (decision->verdict.allowed) {
            remaining.push_back(decision->verdict.remaining);
          }
        }
        answered.count_down();
      });
    }
    answered.wait();
    std::lock_guard lock(mu);
    EXPECT_EQ(errors, 0);
    EXPECT_FALSE(on_callers_thread);
    std::sort(remaining.begin(), remaining.end());
    EXPECT_EQ(remaining, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
    EXPECT_FALSE(store::acquire_now(store, ref(limits, "async"), 1)->verdict.allowed);

    bool refused_at_once = false;
    store.acquire(ref(limits, std::string(sluice::kMaxSubjectBytes + 1, 'x')), 1,
                  [&](StatusOr<Decision> decision) {
                    refused_at_once = decision.status().code() == StatusCode::kInvalidArgument;
                  });
    EXPECT_TRUE(refused_at_once);
  }
}

// Async callers that send their next decision from inside the callback: with two calls allowed
// in flight, the batcher sends half of a call's answered callers' next decisions while the other
// half are still being answered (decision_batcher.h), and every decision stays exact.
TEST_F(RedisStoreTest, AsyncCallersInALoopKeepTwoCallsInFlightAndEachIsExact) {
  for (const int in_flight : {2, 1}) {
    SCOPED_TRACE("batches_in_flight " + std::to_string(in_flight));
    ASSERT_TRUE(run(*client_, {"FLUSHALL"}).is_status());
    ManualClock clock(kEpoch);
    RedisStore store(client_, {.batches_in_flight = in_flight, .pinned_clock_for_tests = &clock});
    const std::vector<Limit> limits = {FixedWindow{.limit = 600, .window = kMicrosPerHour}};
    constexpr int kCallers = 10;
    constexpr int kRounds = 100;  // 1 000 decisions on one key at one instant: 600 admitted
    std::latch finished(kCallers);
    std::mutex mu;
    std::vector<std::int64_t> remaining;
    int errors = 0;
    // Each caller's loop: decide, and from the callback decide again until kRounds are done.
    std::function<void(int)> decide = [&](int left) {
      store.acquire(ref(limits, "loop"), 1, [&, left](StatusOr<Decision> decision) {
        {
          std::lock_guard lock(mu);
          if (!decision.ok()) {
            ++errors;
          } else if (decision->verdict.allowed) {
            remaining.push_back(decision->verdict.remaining);
          }
        }
        if (left > 1) {
          decide(left - 1);
        } else {
          finished.count_down();
        }
      });
    };
    // The callers start from inside one decision's callback, so their first decisions leave in
    // one call and its answers come back together, with nothing else queued or in flight: the
    // second call is then bound to leave halfway through answering them (when two are allowed).
    store.acquire(ref(limits, "starter"), 1, [&](const StatusOr<Decision>& started) {
      if (!started.ok()) {
        std::lock_guard lock(mu);
        ++errors;
      }
      for (int c = 0; c < kCallers; ++c) decide(kRounds);
    });
    finished.wait();
    std::lock_guard lock(mu);
    EXPECT_EQ(errors, 0);
    std::vector<std::int64_t> expected(600);
    std::iota(expected.begin(), expected.end(), 0);
    std::sort(remaining.begin(), remaining.end());
    EXPECT_EQ(remaining, expected);
    const DecisionBatchStats stats = store.batch_stats();
    EXPECT_EQ(stats.decisions, std::uint64_t{kCallers * kRounds + 1});
    EXPECT_LT(stats.calls, stats.decisions);
    EXPECT_EQ(stats.most_in_flight, in_flight);
  }
}

// max_batch 1 turns batching off: one script call per decision, same decisions.
TEST_F(RedisStoreTest, WithoutBatchingEveryDecisionIsItsOwnCall) {
  ManualClock clock(kEpoch);
  RedisStore store(client_, {.max_batch = 1, .pinned_clock_for_tests = &clock});
  const std::vector<Limit> limits = {SlidingLog{.limit = 2, .window = kMicrosPerSecond}};
  EXPECT_EQ(store::acquire_now(store, ref(limits, "s"), 1)->verdict.remaining, 1);
  EXPECT_EQ(store::acquire_now(store, ref(limits, "s"), 1)->verdict.remaining, 0);
  EXPECT_FALSE(store::acquire_now(store, ref(limits, "s"), 1)->verdict.allowed);
  EXPECT_EQ((*store.inspect(ref(limits, "s")))[0].remaining, 0);
  const DecisionBatchStats stats = store.batch_stats();
  EXPECT_EQ(stats.decisions, 4u);
  EXPECT_EQ(stats.calls, 4u);
}

TEST_F(RedisStoreTest, ACrashedHoldersLeaseExpiresAfterLeaseTtl) {
  ManualClock clock(kEpoch);
  RedisStore store(client_, {.pinned_clock_for_tests = &clock});
  constexpr Micros kTtl = 30 * kMicrosPerSecond;
  const std::vector<Limit> limits = {Concurrency{.limit = 1, .lease_ttl = kTtl}};
  const StatusOr<Decision> crashed = store::acquire_now(store, ref(limits, "db"), 1);
  ASSERT_TRUE(crashed.ok() && crashed->lease);  // the holder dies without releasing

  clock.advance(kTtl - 1);
  const StatusOr<Decision> early = store::acquire_now(store, ref(limits, "db"), 1);
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(early->verdict.allowed);
  EXPECT_EQ(early->verdict.retry_after, 1);

  clock.advance(1);
  const StatusOr<Decision> next = store::acquire_now(store, ref(limits, "db"), 1);
  ASSERT_TRUE(next.ok());
  EXPECT_TRUE(next->verdict.allowed);
  ASSERT_TRUE(next->lease);
  EXPECT_NE(*next->lease, *crashed->lease);
  // The dead holder cannot come back: its lease is neither renewable nor releasable.
  EXPECT_FALSE(
      *store::lease_now(store, ref(limits, "db"), store::LeaseOperation::kRenew, *crashed->lease));
  EXPECT_FALSE(*store::lease_now(store, ref(limits, "db"), store::LeaseOperation::kRelease,
                                 *crashed->lease));
  EXPECT_FALSE(store::acquire_now(store, ref(limits, "db"), 1)->verdict.allowed);
  EXPECT_TRUE(
      *store::lease_now(store, ref(limits, "db"), store::LeaseOperation::kRelease, *next->lease));
  EXPECT_TRUE(store::acquire_now(store, ref(limits, "db"), 1)->verdict.allowed);
}

// On Redis's own clock (the production scripts, nothing pinned): the inspector's dry run and lease
// list answer from Redis's TIME and leave every key byte for byte and TTL as it was.
TEST_F(RedisStoreTest, ADryRunAndTheLeaseListUseRedisClockAndWriteNothing) {
  RedisStore store(client_);
  constexpr Micros kTtl = 60 * kMicrosPerSecond;
  const std::vector<Limit> limits = {Concurrency{.limit = 2, .lease_ttl = kTtl},
                                     FixedWindow{.limit = 100, .window = kMicrosPerHour}};
  const StatusOr<Decision> first = store::acquire_now(store, ref(limits, "db"), 1);
  const StatusOr<Decision> second = store::acquire_now(store, ref(limits, "db"), 1);
  ASSERT_TRUE(first.ok() && first->lease && second.ok() && second->lease);
  const std::vector<std::string> keys = {documented_key("test.policy", "db", 0),
                                         documented_key("test.policy", "db", 1)};
  const Snapshot before = snapshot(*client_, keys, /*persist=*/false);

  const StatusOr<DryRun> run = store.dry_run(ref(limits, "db"), 1);
  ASSERT_TRUE(run.ok()) << run.status().to_string();
  ASSERT_EQ(run->limits.size(), 2u);
  EXPECT_FALSE(run->limits[0].allowed);
  ASSERT_TRUE(run->limits[0].retry_after);
  EXPECT_GT(*run->limits[0].retry_after, kTtl - 10 * kMicrosPerSecond);  // the first lease's end
  EXPECT_LE(*run->limits[0].retry_after, kTtl);
  EXPECT_TRUE(run->limits[1].allowed);
  EXPECT_EQ(run->limits[1].remaining, 97);
  EXPECT_EQ(run->policy.limit_index, 0u);
  EXPECT_EQ(run->policy.verdict, run->limits[0]);

  const StatusOr<std::vector<LimitLeases>> listing = store.leases(ref(limits, "db"), 1);
  ASSERT_TRUE(listing.ok()) << listing.status().to_string();
  ASSERT_EQ(listing->size(), 1u);
  const LimitLeases& held = (*listing)[0];
  EXPECT_EQ(held.limit_index, 0u);
  EXPECT_EQ(held.count, 2u);
  EXPECT_EQ(held.units, 2);
  ASSERT_EQ(held.leases.size(), 1u);            // the cap
  EXPECT_EQ(held.leases[0].id, *first->lease);  // the sooner to expire
  EXPECT_EQ(held.leases[0].cost, 1);
  EXPECT_GT(held.leases[0].expires_after, kTtl - 10 * kMicrosPerSecond);
  EXPECT_LE(held.leases[0].expires_after, kTtl);

  const Snapshot after = snapshot(*client_, keys, /*persist=*/false);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SCOPED_TRACE(keys[i]);
    ASSERT_TRUE(before.keys[i].value);
    EXPECT_EQ(after.keys[i].value, before.keys[i].value);
    EXPECT_EQ(after.keys[i].expires_at_ms, before.keys[i].expires_at_ms);
  }

  // The listed id releases its lease; the dry run then allows, and still charges nothing.
  ASSERT_TRUE(*store::lease_now(store, ref(limits, "db"), store::LeaseOperation::kRelease,
                                held.leases[0].id));
  const StatusOr<DryRun> freed = store.dry_run(ref(limits, "db"), 1);
  ASSERT_TRUE(freed.ok());
  EXPECT_TRUE(freed->policy.verdict.allowed);
  EXPECT_EQ(freed->policy.verdict.remaining, 0);
  EXPECT_EQ((*store.leases(ref(limits, "db"), 100))[0].count, 1u);
  EXPECT_TRUE(store.leases(ref({limits[1]}, "db"), 100)->empty());  // no concurrency limit
}

// ---- 4. every key expires; denied and peeked subjects store nothing (real time) -----------------

struct TtlCase {
  std::string policy;
  Limit limit;
  Micros longest_life;  // the most a state of this limit can live after its last write
  // False for leaky_bucket: it admits any cost while its queue is short (DESIGN.md §2), so a
  // large cost is no outright denial there.
  bool denies_large_costs = true;
};

// A window written again while its key's TTL still covers its state keeps that TTL (the fixed
// window's runs to the window's end, the sliding window's to the end of the next window); a
// window that outlasts it (its length grew in a policy edit) sets it again. Pinned time moves
// while Redis's clock barely does, so a TTL set again shows as a new PTTL.
TEST_F(RedisStoreTest, WindowsKeepTheirTtlWithinAWindowAndSetItAgainWhenTheWindowGrows) {
  static_assert(kEpoch % (20 * kMicrosPerSecond) == 0);  // a window start for 10 s and 20 s
  struct Case {
    const char* subject;
    Limit ten;
    Limit twenty;
    std::int64_t windows_to_end;  // the state lives until the end of this many windows
  };
  const std::vector<Case> cases = {
      {"fixed", FixedWindow{.limit = 5, .window = 10 * kMicrosPerSecond},
       FixedWindow{.limit = 5, .window = 20 * kMicrosPerSecond}, 1},
      {"sliding", SlidingWindow{.limit = 5, .window = 10 * kMicrosPerSecond},
       SlidingWindow{.limit = 5, .window = 20 * kMicrosPerSecond}, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.subject);
    ManualClock clock(kEpoch + kMicrosPerSecond);
    RedisStore store(client_, {.pinned_clock_for_tests = &clock});
    const std::vector<Limit> ten = {c.ten};
    const std::vector<Limit> twenty = {c.twenty};
    const std::string key = documented_key("test.policy", c.subject, 0);
    const auto pttl = [&] { return run_integer(*client_, {"PTTL", key}); };
    const std::int64_t end_ms = c.windows_to_end * 10'000;  // from kEpoch, 10 s windows

    EXPECT_EQ(store::acquire_now(store, ref(ten, c.subject), 1)->verdict.remaining, 4);
    EXPECT_GT(pttl(), end_ms - 2'000);  // end_ms - 1 000 to the end
    EXPECT_LE(pttl(), end_ms - 1'000);

    clock.advance(4 * kMicrosPerSecond);  // a new TTL would be end_ms - 5 000 or less
    EXPECT_EQ(store::acquire_now(store, ref(ten, c.subject), 1)->verdict.remaining, 3);
    EXPECT_GT(pttl(), end_ms - 2'000) << "the TTL was set again";

    clock.advance(kMicrosPerSecond);  // the window is now 20 s, from kEpoch
    const StatusOr<Decision> grown = store::acquire_now(store, ref(twenty, c.subject), 1);
    EXPECT_EQ(grown->verdict.remaining, 2);
    const std::int64_t grown_end_ms = 2 * end_ms - 6'000;  // from now, 6 s after kEpoch
    EXPECT_EQ(grown->verdict.reset_after, grown_end_ms * kMicrosPerMilli);
    EXPECT_GT(pttl(), grown_end_ms - 1'000) << "the TTL still ends with the 10 s window";
    EXPECT_LE(pttl(), grown_end_ms);
  }
}

TEST_F(RedisStoreTest,
       EveryKeyExpiresWithinItsAlgorithmsBoundAndDeniedOrPeekedSubjectsStoreNothing) {
  constexpr std::int64_t kMaxCost = 3;
  const std::vector<TtlCase> cases = {
      {"ttl.fixed", FixedWindow{.limit = 5, .window = 40 * kMicrosPerSecond},
       40 * kMicrosPerSecond},
      {"ttl.sliding", SlidingWindow{.limit = 5, .window = 40 * kMicrosPerSecond},
       80 * kMicrosPerSecond},  // current window plus the next, where it still weighs
      {"ttl.log", SlidingLog{.limit = 5, .window = 40 * kMicrosPerSecond}, 40 * kMicrosPerSecond},
      {"ttl.bucket", TokenBucket{.capacity = 5, .refill = 3, .period = 7 * kMicrosPerSecond},
       5 * 7 * kMicrosPerSecond / 3 + 1},  // a full refill, rounded up
      {"ttl.interval",
       TokenBucket{.capacity = 5,
                   .refill = 2,
                   .period = 7 * kMicrosPerSecond,
                   .refill_mode = RefillMode::kInterval},
       3 * 7 * kMicrosPerSecond},  // ceil(5 / 2) refills
      {"ttl.gcra", Gcra{.rate = 3, .period = 7 * kMicrosPerSecond, .burst = 4},
       5 * 7 * kMicrosPerSecond / 3 + 1},
      {"ttl.leaky",
       LeakyBucket{.rate = 3, .period = 7 * kMicrosPerSecond, .max_delay = 20 * kMicrosPerSecond},
       20 * kMicrosPerSecond + kMaxCost * 7 * kMicrosPerSecond / 3 + 1,  // queue + one request
       false},
      {"ttl.leases", Concurrency{.limit = 5, .lease_ttl = 40 * kMicrosPerSecond},
       40 * kMicrosPerSecond},
  };
  RedisStore store(client_);
  Rng rng(7);
  std::set<std::string> may_exist;
  std::vector<std::string> must_not_exist;
  for (const TtlCase& c : cases) {
    const std::vector<Limit> limits = {c.limit};
    std::vector<std::string> leases;
    for (int subject = 0; subject < 10; ++subject) {
      const std::string name = "user-" + std::to_string(subject);
      for (int i = 0; i < 12; ++i) {
        const std::int64_t cost = uniform(rng, 0, kMaxCost);
        const StatusOr<Decision> decision =
            store::acquire_now(store, ref(limits, name, c.policy), cost);
        ASSERT_TRUE(decision.ok()) << decision.status().to_string();
        if (decision->lease) leases.push_back(*decision->lease);
        if (decision->verdict.allowed && cost > 0) {
          may_exist.insert(documented_key(c.policy, name, 0));
        }
      }
    }
    for (std::size_t i = 0; i < leases.size(); ++i) {  // renew some, release some
      const std::string subject = "user-" + std::to_string(i % 10);
      (void)(i % 2 == 0 ? store::lease_now(store, ref(limits, subject, c.policy),
                                           store::LeaseOperation::kRenew, leases[i])
                        : store::lease_now(store, ref(limits, subject, c.policy),
                                           store::LeaseOperation::kRelease, leases[i]));
    }
    for (int subject = 0; subject < 5; ++subject) {
      const std::string peek = "peek-" + std::to_string(subject);
      const std::string deny = "deny-" + std::to_string(subject);
      ASSERT_TRUE(store::acquire_now(store, ref(limits, peek, c.policy), 0).ok());
      ASSERT_TRUE(store.inspect(ref(limits, peek, c.policy)).ok());
      must_not_exist.push_back(documented_key(c.policy, peek, 0));
      if (!c.denies_large_costs) continue;
      for (const std::int64_t cost : {std::int64_t{6}, algorithm::kMaxCost}) {
        const StatusOr<Decision> denied =
            store::acquire_now(store, ref(limits, deny, c.policy), cost);
        ASSERT_TRUE(denied.ok());
        ASSERT_FALSE(denied->verdict.allowed);  // more than the limit can ever grant
      }
      ASSERT_TRUE(store::lease_now(store, ref(limits, deny, c.policy),
                                   store::LeaseOperation::kRelease, "no-such-lease")
                      .ok());
      must_not_exist.push_back(documented_key(c.policy, deny, 0));
    }
  }

  const std::vector<std::string> keys = all_keys(*client_);
  EXPECT_EQ(static_cast<std::int64_t>(keys.size()), run_integer(*client_, {"DBSIZE"}));
  EXPECT_GE(keys.size(), 50u);
  std::map<std::string, int> per_policy;
  for (const std::string& key : keys) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(may_exist.count(key)) << "a key no admitted request explains";
    const auto c = std::find_if(cases.begin(), cases.end(), [&](const TtlCase& candidate) {
      return key.starts_with("sluice:{" + candidate.policy + ":");
    });
    ASSERT_NE(c, cases.end());
    ++per_policy[c->policy];
    const std::int64_t pttl = run_integer(*client_, {"PTTL", key});
    EXPECT_GT(pttl, 0) << "a key without a TTL lives forever";
    EXPECT_LE(pttl, ceil_ms(c->longest_life));
  }
  for (const TtlCase& c : cases) EXPECT_GE(per_policy[c.policy], 1) << c.policy;
  for (const std::string& key : must_not_exist) {
    EXPECT_EQ(run_integer(*client_, {"EXISTS", key}), 0) << key;
  }
}

// The TAT of gcra, the smooth token bucket and the leaky bucket is stored as decimal text when
// whole (Redis then keeps an integer object, 16 bytes less per key) and as 't' + '<dd' otherwise.
// Neither may be read as another kind's state, and no other value may be read as a TAT: the
// previous scripts' '<d' / '<dd' TATs (an upgrade forgets them once), the older
// "<tat>:<fraction>" text, the other kinds' tagged values, and a packed TAT whose bytes begin
// like a number ("4e15") all decide exactly like an absent key.
TEST_F(RedisStoreTest, EveryOtherEncodingReadsAsAbsentAndNeverAsALiveTat) {
  ManualClock clock(kEpoch);
  RedisStore store(client_, {.pinned_clock_for_tests = &clock});
  const auto packed = [](double value) {  // struct '<d'
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    return out;
  };
  const Micros future = kEpoch + kMicrosPerHour;
  // 8 bytes a '<d' could hold, which tonumber() alone would read as 4e15 µs, year 2096.
  const std::string starts_like_a_number = std::string("4e15\0\0\0C", 8);
  const auto decides_like_an_absent_key = [&](const std::vector<Limit>& limits,
                                              const std::string& policy, const std::string& label,
                                              const std::string& value) {
    SCOPED_TRACE(label);
    const std::string subject = "planted-" + std::to_string(std::hash<std::string>{}(label));
    const StatusOr<Decision> fresh =
        store::acquire_now(store, ref(limits, "fresh-" + subject, policy), 1);
    ASSERT_TRUE(run(*client_, {"SET", documented_key(policy, subject, 0), value}).is_status());
    const StatusOr<Decision> planted = store::acquire_now(store, ref(limits, subject, policy), 1);
    ASSERT_TRUE(fresh.ok() && planted.ok());
    EXPECT_TRUE(fresh->verdict.allowed);
    EXPECT_EQ(planted->verdict, fresh->verdict)
        << "absent " << show(fresh->verdict) << "\nplanted " << show(planted->verdict);
  };

  const std::vector<Limit> tat_kinds = {
      Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 4},
      TokenBucket{.capacity = 5, .refill = 1, .period = kMicrosPerHour},
      LeakyBucket{.rate = 1, .period = kMicrosPerHour, .max_delay = 4 * kMicrosPerHour}};
  const std::vector<std::pair<std::string, std::string>> foreign = {
      {"previous '<d' TAT", packed(static_cast<double>(future))},
      {"previous '<dd' TAT", packed(static_cast<double>(future)) + packed(1)},
      {"older decimal TAT with fraction", std::to_string(future) + ":1"},
      {"interval bucket", "i" + packed(0) + packed(static_cast<double>(kEpoch))},
      {"fixed window", "w" + packed(static_cast<double>(kEpoch)) + packed(1e6)},
      {"sliding window", "s" + packed(static_cast<double>(kEpoch)) + packed(1e6) + packed(1e6)},
      {"'<d' beginning like a number", starts_like_a_number}};
  for (std::size_t k = 0; k < tat_kinds.size(); ++k) {
    for (const auto& [label, value] : foreign) {
      decides_like_an_absent_key({tat_kinds[k]}, "tat." + std::to_string(k),
                                 show(tat_kinds[k]) + ": " + label, value);
    }
  }

  // What the TAT kinds write: decimal when whole (an integer object in Redis), else 't' + '<dd'.
  const std::vector<Limit> whole = {Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 4}};
  const std::vector<Limit> fraction = {Gcra{.rate = 3, .period = 7 * kMicrosPerSecond, .burst = 4}};
  ASSERT_TRUE(store::acquire_now(store, ref(whole, "writer"), 1).ok());
  ASSERT_TRUE(store::acquire_now(store, ref(fraction, "writer", "fraction"), 1).ok());
  const std::string whole_key = documented_key("test.policy", "writer", 0);
  const std::string decimal = run(*client_, {"GET", whole_key}).as_string();
  EXPECT_EQ(decimal, std::to_string(kEpoch + kMicrosPerHour));  // one emission interval
  EXPECT_EQ(run(*client_, {"OBJECT", "ENCODING", whole_key}).as_string(), "int");
  const std::string tagged =
      run(*client_, {"GET", documented_key("fraction", "writer", 0)}).as_string();
  ASSERT_EQ(tagged.size(), 17u);
  EXPECT_EQ(tagged[0], 't');

  const std::vector<Limit> other_kinds = {TokenBucket{.capacity = 5,
                                                      .refill = 1,
                                                      .period = kMicrosPerHour,
                                                      .refill_mode = RefillMode::kInterval},
                                          FixedWindow{.limit = 5, .window = kMicrosPerHour},
                                          SlidingWindow{.limit = 5, .window = kMicrosPerHour}};
  for (std::size_t k = 0; k < other_kinds.size(); ++k) {
    for (const auto& [label, value] : std::vector<std::pair<std::string, std::string>>{
             {"decimal TAT", decimal}, {"'t' TAT", tagged}}) {
      decides_like_an_absent_key({other_kinds[k]}, "other." + std::to_string(k),
                                 show(other_kinds[k]) + ": " + label, value);
    }
  }
}

// ---- 5. binary-safe subjects -------------------------------------------------------------------

TEST_F(RedisStoreTest, SubjectsAreBinarySafeUpTo1024BytesWithIndependentStateAndDocumentedKeys) {
  std::string every_byte;
  for (int i = 0; i < 1024; ++i) every_byte += static_cast<char>(i % 256);
  std::string every_byte_but_last = every_byte;
  every_byte_but_last.back() = 'x';
  const std::vector<std::string> subjects = {"",
                                             "a",
                                             std::string("a\0", 2),
                                             std::string("a\0b", 3),
                                             "line\nbreak\r\n",
                                             "}",
                                             "{",
                                             "}{x}{",
                                             "{other.policy:a}",
                                             "a:b}:0",
                                             "\xff\xfe\x80 not utf-8 \xc3",
                                             every_byte,
                                             every_byte_but_last,
                                             std::string(1024, '\0')};
  const std::vector<Limit> limits = {FixedWindow{.limit = 1, .window = kMicrosPerHour},
                                     SlidingLog{.limit = 1, .window = kMicrosPerHour}};
  RedisStore store(client_);
  for (const std::string& subject : subjects) {
    SCOPED_TRACE(testing::PrintToString(subject.substr(0, 40)));
    EXPECT_TRUE(store::acquire_now(store, ref(limits, subject), 1)->verdict.allowed);
  }
  for (const std::string& subject : subjects) {  // each subject has its own state
    SCOPED_TRACE(testing::PrintToString(subject.substr(0, 40)));
    EXPECT_FALSE(store::acquire_now(store, ref(limits, subject), 1)->verdict.allowed);
    for (std::size_t i = 0; i < limits.size(); ++i) {
      const std::string key = documented_key("test.policy", subject, i);
      EXPECT_EQ(run_integer(*client_, {"EXISTS", key}), 1);
      // Redis Cluster hashes only "{...}" up to the first '}': every limit key of one subject
      // must share it, so one script call touches one slot.
      const std::string tag = key.substr(0, key.find('}', key.find('{')));
      EXPECT_EQ(tag, documented_key("test.policy", subject, 0).substr(0, tag.size()));
    }
  }
  EXPECT_EQ(run_integer(*client_, {"DBSIZE"}),
            static_cast<std::int64_t>(subjects.size() * limits.size()));
  // The same subject under another policy is another state.
  EXPECT_TRUE(
      store::acquire_now(store, ref(limits, subjects[4], "other.policy"), 1)->verdict.allowed);
}

TEST_F(RedisStoreTest, RejectsSubjectsOver1024BytesWithoutTouchingRedis) {
  RedisStore store(client_);
  const std::vector<Limit> limits = {Concurrency{.limit = 1, .lease_ttl = kMicrosPerHour}};
  const std::string too_long(1025, 'x');
  const StatusOr<Decision> acquired = store::acquire_now(store, ref(limits, too_long), 1);
  EXPECT_EQ(acquired.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(acquired.status().message(), testing::HasSubstr("1024"));
  EXPECT_EQ(store::acquire_now(store, ref(limits, too_long), 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store::lease_now(store, ref(limits, too_long), store::LeaseOperation::kRelease, "x")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store::lease_now(store, ref(limits, too_long), store::LeaseOperation::kRenew, "x")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store.inspect(ref(limits, too_long)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store.reset(ref(limits, too_long)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(run_integer(*client_, {"DBSIZE"}), 0);
  const std::uint64_t requests = client_->stats().requests;
  EXPECT_EQ(store::acquire_now(store, ref(limits, "a", "bad:name"), 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store::acquire_now(store, ref(limits, "a"), -1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(client_->stats().requests, requests) << "invalid input reached Redis";
}

TEST_F(RedisStoreTest, ResetForgetsEveryLimitOfTheSubjectAndNothingElse) {
  RedisStore store(client_);
  const std::vector<Limit> limits = {FixedWindow{.limit = 1, .window = kMicrosPerHour},
                                     Concurrency{.limit = 1, .lease_ttl = kMicrosPerHour}};
  ASSERT_TRUE(store::acquire_now(store, ref(limits, "alice"), 1)->verdict.allowed);
  ASSERT_TRUE(store::acquire_now(store, ref(limits, "bob"), 1)->verdict.allowed);
  ASSERT_TRUE(store.reset(ref(limits, "alice")).ok());
  EXPECT_EQ(run_integer(*client_, {"DBSIZE"}), 2);  // bob's two keys
  EXPECT_TRUE(store::acquire_now(store, ref(limits, "alice"), 1)->verdict.allowed);
  EXPECT_FALSE(store::acquire_now(store, ref(limits, "bob"), 1)->verdict.allowed);
}

// ---- 6. faults ---------------------------------------------------------------------------------

const std::vector<Limit> kThreePerHour = {FixedWindow{.limit = 3, .window = 3650 * kMicrosPerDay}};

TEST(RedisStoreFaultTest, FailsFastWithUnavailableWhenRedisIsAbsentAtStart) {
  StatusOr<std::uint16_t> port = RedisServer::pick_free_port();
  ASSERT_TRUE(port.ok());
  RedisStore store(make_client(*port, {.connect_timeout = 2 * kMicrosPerSecond,
                                       .reconnect_backoff_max = 50 * kMicrosPerMilli}));
  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(i);
    const auto start = SteadyClock::now();
    const StatusOr<Decision> decision = store::acquire_now(store, ref(kThreePerHour, "a"), 1);
    ASSERT_FALSE(decision.ok());
    EXPECT_EQ(decision.status().code(), StatusCode::kUnavailable);
    EXPECT_LT(elapsed_since(start), std::chrono::milliseconds(2500));  // generous: one connect
    EXPECT_EQ(store.inspect(ref(kThreePerHour, "a")).status().code(), StatusCode::kUnavailable);
  }
}

TEST(RedisStoreFaultTest, KilledMidLoadFailsWithUnavailableOrDeadlineThenRecoversAfterRestart) {
  std::unique_ptr<RedisServer> server = start_server();
  ASSERT_NE(server, nullptr);
  std::shared_ptr<redis::Multiplexer> client =
      make_client(server->port(), {.connect_timeout = 500 * kMicrosPerMilli,
                                   .command_timeout = 500 * kMicrosPerMilli,
                                   .reconnect_backoff_max = 50 * kMicrosPerMilli});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(wait_until_answering(*client));
  RedisStore store(client);
  // The limit 3 subject is used up before the kill; the restarted server is empty.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(store::acquire_now(store, ref(kThreePerHour, "x"), 1)->verdict.allowed);
  ASSERT_FALSE(store::acquire_now(store, ref(kThreePerHour, "x"), 1)->verdict.allowed);

  const std::vector<Limit> load = {
      TokenBucket{.capacity = 1000, .refill = 1000, .period = kMicrosPerSecond},
      SlidingLog{.limit = 100, .window = kMicrosPerSecond}};
  std::atomic<bool> stop{false};
  std::atomic<int> successes{0};
  std::atomic<int> failures{0};
  std::mutex mu;
  std::map<StatusCode, int> failure_codes;
  std::map<StatusCode, std::string> failure_messages;  // the first of each code
  std::chrono::milliseconds slowest{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string subject = "load-" + std::to_string(t) + "-" + std::to_string(i % 50);
        const auto start = SteadyClock::now();
        const StatusOr<Decision> decision = store::acquire_now(store, ref(load, subject), 1);
        const auto took = elapsed_since(start);
        std::lock_guard lock(mu);
        slowest = std::max(slowest, took);
        if (decision.ok()) {
          ++successes;
        } else {
          ++failures;
          ++failure_codes[decision.status().code()];
          failure_messages.emplace(decision.status().code(), decision.status().message());
        }
      }
    });
  }
  const auto wait_for = [&](const std::function<bool()>& condition) {
    const auto deadline = SteadyClock::now() + kWaitLimit;
    while (!condition() && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
  };
  EXPECT_TRUE(wait_for([&] { return successes.load() >= 500; }));
  ASSERT_TRUE(server->kill_hard().ok());
  EXPECT_TRUE(wait_for([&] { return failures.load() >= 100; }));
  ASSERT_TRUE(server->restart().ok());  // empty: no data, no cached scripts
  const int before = successes.load();
  EXPECT_TRUE(wait_for([&] { return successes.load() >= before + 500; }))
      << "the same store never recovered";
  stop = true;
  for (std::thread& thread : threads) thread.join();
  {
    std::lock_guard lock(mu);
    for (const auto& [code, count] : failure_codes) {
      SCOPED_TRACE(std::string(status_code_name(code)) + " x" + std::to_string(count) + ", e.g. " +
                   failure_messages[code]);
      EXPECT_THAT(code, AnyOf(StatusCode::kUnavailable, StatusCode::kDeadlineExceeded));
    }
    EXPECT_LT(slowest, std::chrono::milliseconds(3000));  // a connect plus a command timeout
  }
  // NOSCRIPT was answered by re-sending the source; decisions are those of an empty store.
  EXPECT_GE(client->stats().script_reloads, 1u);
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(store::acquire_now(store, ref(kThreePerHour, "x"), 1)->verdict.allowed);
  const StatusOr<Decision> fourth = store::acquire_now(store, ref(kThreePerHour, "x"), 1);
  ASSERT_TRUE(fourth.ok());
  EXPECT_FALSE(fourth->verdict.allowed);
  EXPECT_EQ(fourth->verdict.remaining, 0);
}

TEST_F(RedisStoreTest, ReloadsItsScriptsTransparentlyAfterScriptFlush) {
  RedisStore store(client_);
  const std::vector<Limit> limits = {Concurrency{.limit = 2, .lease_ttl = kMicrosPerHour}};
  const StatusOr<Decision> first = store::acquire_now(store, ref(limits, "db"), 1);
  ASSERT_TRUE(first.ok() && first->lease);
  ASSERT_TRUE(run(*client_, {"SCRIPT", "FLUSH"}).is_status());
  const std::uint64_t reloads = client_->stats().script_reloads;
  EXPECT_TRUE(*store::lease_now(store, ref(limits, "db"), store::LeaseOperation::kRenew,
                                *first->lease));  // lease script
  ASSERT_TRUE(run(*client_, {"SCRIPT", "FLUSH"}).is_status());
  EXPECT_EQ((*store.inspect(ref(limits, "db")))[0].remaining, 1);  // inspect script
  ASSERT_TRUE(run(*client_, {"SCRIPT", "FLUSH"}).is_status());
  EXPECT_TRUE(store::acquire_now(store, ref(limits, "db"), 1)->verdict.allowed);  // acquire script
  EXPECT_FALSE(store::acquire_now(store, ref(limits, "db"), 1)->verdict.allowed);
  EXPECT_EQ(client_->stats().script_reloads, reloads + 3);
}

TEST(RedisStoreFaultTest, StalledServerGivesDeadlineExceededWithinBoundThenRecovers) {
  std::unique_ptr<RedisServer> server = start_server();
  ASSERT_NE(server, nullptr);
  std::shared_ptr<redis::Multiplexer> client = make_client(
      server->port(),
      {.command_timeout = 100 * kMicrosPerMilli, .reconnect_backoff_max = 50 * kMicrosPerMilli});
  std::shared_ptr<redis::Multiplexer> staller = make_client(server->port());
  ASSERT_TRUE(client != nullptr && staller != nullptr);
  ASSERT_TRUE(wait_until_answering(*client) && wait_until_answering(*staller));
  RedisStore store(client);
  ASSERT_TRUE(store::acquire_now(store, ref(kThreePerHour, "s"), 1)->verdict.allowed);

  std::atomic<bool> slept{false};
  staller->async_command({"DEBUG", "SLEEP", "1"}, [&](StatusOr<Reply>) { slept = true; });
  // Until the sleep reaches the server a call may still succeed; the first that meets it fails.
  StatusOr<Decision> stalled = Status(StatusCode::kUnknown, "no call made");
  std::chrono::milliseconds took{0};
  for (const auto start = SteadyClock::now(); elapsed_since(start) < std::chrono::seconds(1);) {
    const auto call = SteadyClock::now();
    stalled = store::acquire_now(store, ref(kThreePerHour, "s"), 0);
    took = elapsed_since(call);
    if (!stalled.ok()) break;
  }
  ASSERT_FALSE(stalled.ok());
  EXPECT_EQ(stalled.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(took, std::chrono::milliseconds(800));  // generous: the timeout is 100 ms
  EXPECT_GE(client->stats().timeouts, 1u);

  // The same store recovers once the server wakes up; the state survived the stall.
  EXPECT_TRUE(wait_until_answering(*client));
  const StatusOr<Decision> after = store::acquire_now(store, ref(kThreePerHour, "s"), 1);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_TRUE(after->verdict.allowed);
  EXPECT_EQ(after->verdict.remaining, 1);
  staller.reset();  // completes the DEBUG SLEEP call
  EXPECT_TRUE(slept.load());
}

}  // namespace
}  // namespace sluice::store
