// Integration tests on a real Redis Cluster (tests/testing/redis_cluster.h: 3 masters, 3 replicas,
// started per suite on free loopback ports, stopped by PID): slot hashing against the server's own
// CLUSTER KEYSLOT, routing from one seed, ASK and MOVED during a live slot migration, scripts
// reloaded per node, and the Redis store's decisions exact across slots, under a reshard and
// through a master's failover.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/core/key.h"
#include "sluice/store/redis/hash_slot.h"
#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/eventually.h"
#include "testing/redis_cluster.h"
#include "testing/subprocess.h"
#include "testing/test_certificates.h"

namespace sluice::store {
namespace {

using redis::Reply;
using test::RedisCluster;
using SteadyClock = std::chrono::steady_clock;

std::unique_ptr<RedisCluster> start_cluster(int replicas_per_master = 1) {
  StatusOr<std::unique_ptr<RedisCluster>> cluster =
      RedisCluster::start({.masters = 3, .replicas_per_master = replicas_per_master});
  EXPECT_TRUE(cluster.ok()) << cluster.status().to_string();
  return cluster.ok() ? std::move(*cluster) : nullptr;
}

std::shared_ptr<redis::Multiplexer> cluster_client(const std::string& url,
                                                   redis::MultiplexerOptions base = {}) {
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::open(url, std::move(base));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::shared_ptr<redis::Multiplexer>(std::move(*client)) : nullptr;
}

Reply run(redis::Multiplexer& client, std::vector<std::string> args) {
  StatusOr<Reply> reply = client.command(std::move(args));
  if (reply.ok()) return std::move(*reply);
  ADD_FAILURE() << reply.status().to_string();
  return Reply::error("(call failed) " + reply.status().to_string());
}

Reply run_on_key(redis::Multiplexer& client, std::vector<std::string> args) {
  StatusOr<Reply> reply = client.execute({.args = std::move(args), .key_index = 1});
  if (reply.ok()) return std::move(*reply);
  ADD_FAILURE() << reply.status().to_string();
  return Reply::error("(call failed) " + reply.status().to_string());
}

SubjectRef ref(const std::vector<algorithm::Limit>& limits, std::string_view subject,
               std::string_view policy = "cluster.policy") {
  return {.policy = policy, .limits = limits, .subject = subject};
}

int slot_of_subject(std::string_view policy, std::string_view subject) {
  return redis::key_hash_slot(redis_limit_key(policy, subject, 0));
}

// Every key of a cluster test lives in these few slots' masters; FLUSHALL on every master.
void flush_masters(const RedisCluster& cluster) {
  for (std::size_t i = 0; i < cluster.nodes().size(); ++i) {
    StatusOr<std::string> role = cluster.cli(i, {"ROLE"});
    if (role.ok() && role->starts_with("master")) (void)cluster.cli(i, {"FLUSHALL"});
  }
}

class RedisClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = start_cluster().release(); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr) << "the cluster did not start";
    flush_masters(*cluster_);
  }
  static RedisCluster* cluster_;
};

RedisCluster* RedisClusterTest::cluster_ = nullptr;

TEST_F(RedisClusterTest, KeySlotsAgreeWithClusterKeyslotOnRandomKeys) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  std::mt19937_64 random(20261124);
  std::uniform_int_distribution<int> length(0, 24);
  // Braces are frequent so that tags, empty tags and unclosed tags all occur.
  const std::string alphabet = std::string("ab{}{}:x\0\xff", 11);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  for (int i = 0; i < 500; ++i) {
    std::string key;
    for (int n = length(random); n > 0; --n) key.push_back(alphabet[pick(random)]);
    const Reply slot = run(*client, {"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(slot.is_integer()) << slot.debug_string();
    EXPECT_EQ(slot.as_integer(), redis::key_hash_slot(key)) << "key of " << key.size() << " bytes";
  }
}

TEST_F(RedisClusterTest, OneSeedIsEnoughToReachEveryMaster) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url_with_one_seed());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i);
    EXPECT_EQ(run_on_key(*client, {"SET", key, std::to_string(i)}), Reply::status("OK"));
  }
  for (int i = 0; i < 300; ++i) {
    EXPECT_EQ(run_on_key(*client, {"GET", "k" + std::to_string(i)}),
              Reply::bulk(std::to_string(i)));
  }
  EXPECT_EQ(client->stats().masters, 3);
  // Every master holds some of the keys: nothing went to one node only.
  int masters_with_keys = 0;
  for (std::size_t i = 0; i < cluster_->nodes().size(); ++i) {
    StatusOr<std::string> role = cluster_->cli(i, {"ROLE"});
    StatusOr<std::string> size = cluster_->cli(i, {"DBSIZE"});
    ASSERT_TRUE(role.ok() && size.ok());
    if (role->starts_with("master") && std::stoi(*size) > 0) ++masters_with_keys;
  }
  EXPECT_EQ(masters_with_keys, 3);
}

TEST_F(RedisClusterTest, FollowsAskDuringASlotMigrationAndMovedAfterIt) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  // Two keys of one slot: "{m}a" will have moved to the target, "{m}b" not yet.
  const std::string moved_key = "{m}a";
  const std::string staying_key = "{m}b";
  const int slot = redis::key_hash_slot(moved_key);
  ASSERT_EQ(run_on_key(*client, {"SET", moved_key, "1"}), Reply::status("OK"));
  ASSERT_EQ(run_on_key(*client, {"SET", staying_key, "2"}), Reply::status("OK"));

  StatusOr<std::uint16_t> source_port = cluster_->master_of_slot(slot);
  ASSERT_TRUE(source_port.ok()) << source_port.status().to_string();
  std::size_t source = 0;
  std::size_t target = 0;
  std::vector<std::size_t> masters;
  for (std::size_t i = 0; i < cluster_->nodes().size(); ++i) {
    StatusOr<std::string> role = cluster_->cli(i, {"ROLE"});
    ASSERT_TRUE(role.ok());
    if (!role->starts_with("master")) continue;
    masters.push_back(i);
    if (cluster_->nodes()[i]->port() == *source_port) source = i;
  }
  for (std::size_t i : masters) {
    if (i != source) target = i;
  }
  StatusOr<std::string> source_id = cluster_->cli(source, {"CLUSTER", "MYID"});
  StatusOr<std::string> target_id = cluster_->cli(target, {"CLUSTER", "MYID"});
  ASSERT_TRUE(source_id.ok() && target_id.ok());
  const std::string slot_text = std::to_string(slot);
  ASSERT_TRUE(
      cluster_->cli(target, {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", *source_id}).ok());
  ASSERT_TRUE(
      cluster_->cli(source, {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", *target_id}).ok());
  ASSERT_TRUE(
      cluster_
          ->cli(source, {"MIGRATE", "127.0.0.1", std::to_string(cluster_->nodes()[target]->port()),
                         moved_key, "0", "5000"})
          .ok());

  // Mid-migration: the source answers ASK for the key it no longer has.
  const std::uint64_t redirections_before = client->stats().redirections;
  EXPECT_EQ(run_on_key(*client, {"GET", moved_key}), Reply::bulk("1"));
  EXPECT_EQ(run_on_key(*client, {"GET", staying_key}), Reply::bulk("2"));
  EXPECT_EQ(client->stats().redirections, redirections_before + 1) << "one ASK followed";

  // Finish: the rest of the slot moves and every master learns the new owner.
  ASSERT_TRUE(
      cluster_
          ->cli(source, {"MIGRATE", "127.0.0.1", std::to_string(cluster_->nodes()[target]->port()),
                         staying_key, "0", "5000"})
          .ok());
  for (std::size_t i : masters) {
    ASSERT_TRUE(cluster_->cli(i, {"CLUSTER", "SETSLOT", slot_text, "NODE", *target_id}).ok());
  }
  EXPECT_EQ(run_on_key(*client, {"GET", staying_key}), Reply::bulk("2"));
  // One MOVED followed — or none, when a slot-map refresh (a throttled one still pending, which
  // a loaded machine delays) read the new owner first: either way, never more.
  const std::uint64_t after_move = client->stats().redirections;
  EXPECT_GE(after_move, redirections_before + 1);
  EXPECT_LE(after_move, redirections_before + 2) << "at most one MOVED followed";
  // The map learnt the move: no redirection for the next command on that slot.
  EXPECT_EQ(run_on_key(*client, {"GET", moved_key}), Reply::bulk("1"));
  EXPECT_EQ(client->stats().redirections, after_move);

  // Put the slot back so that the other tests see the cluster as created.
  ASSERT_TRUE(
      cluster_->cli(source, {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", *target_id}).ok());
  ASSERT_TRUE(
      cluster_->cli(target, {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", *source_id}).ok());
  for (const std::string& key : {moved_key, staying_key}) {
    ASSERT_TRUE(
        cluster_
            ->cli(target, {"MIGRATE", "127.0.0.1",
                           std::to_string(cluster_->nodes()[source]->port()), key, "0", "5000"})
            .ok());
  }
  for (std::size_t i : masters) {
    ASSERT_TRUE(cluster_->cli(i, {"CLUSTER", "SETSLOT", slot_text, "NODE", *source_id}).ok());
  }
  ASSERT_TRUE(cluster_->wait_until_stable().ok());
}

TEST_F(RedisClusterTest, ScriptsAreReloadedPerNodeAfterScriptFlush) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  const redis::Script script("return redis.call('INCR', KEYS[1])");
  // Keys on every master, so every node's cache is exercised.
  std::vector<std::string> keys;
  for (int i = 0; i < 30; ++i) keys.push_back("script" + std::to_string(i));
  for (std::size_t i = 0; i < cluster_->nodes().size(); ++i) {
    (void)cluster_->cli(i, {"SCRIPT", "FLUSH"});
  }
  for (const std::string& key : keys) {
    StatusOr<Reply> reply = client->eval_script(script, {key}, {});
    ASSERT_TRUE(reply.ok()) << reply.status().to_string();
    EXPECT_EQ(*reply, Reply::integer(1));
  }
  // NOSCRIPT once per master, then the cached script.
  EXPECT_EQ(client->stats().script_reloads, 3U);
}

TEST_F(RedisClusterTest, MultiLimitDecisionsOverManySubjectsAreExactAndNeverCrossSlots) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = 3, .window = 60 * kMicrosPerSecond},
      algorithm::TokenBucket{.capacity = 5, .refill = 1, .period = kMicrosPerHour},
      algorithm::SlidingLog{.limit = 4, .window = 60 * kMicrosPerSecond}};
  constexpr int kSubjects = 400;
  constexpr int kAttempts = 5;
  std::atomic<int> allowed{0};
  std::atomic<int> errors{0};
  std::atomic<int> answered{0};
  std::string first_error;
  std::mutex mu;
  // Asynchronous callers: decisions of many subjects wait together, so batches form per slot.
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    for (int s = 0; s < kSubjects; ++s) {
      const std::string subject = "user" + std::to_string(s);
      store.acquire(ref(limits, subject), 1, [&](StatusOr<Decision> decision) {
        if (!decision.ok()) {
          std::lock_guard lock(mu);
          if (errors++ == 0) first_error = decision.status().to_string();
        } else if (decision->verdict.allowed) {
          ++allowed;
        }
        ++answered;
      });
    }
  }
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (answered.load() < kSubjects * kAttempts && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(answered.load(), kSubjects * kAttempts);
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(allowed.load(), kSubjects * 3) << "the fixed window's 3 per subject";
  std::set<int> slots;
  for (int s = 0; s < kSubjects; ++s)
    slots.insert(slot_of_subject("cluster.policy", "user" + std::to_string(s)));
  EXPECT_GT(slots.size(), 300U) << "subjects spread over many slots";
  // Several decisions shared script calls (per slot), so batching still works in a cluster.
  EXPECT_LE(store.batch_stats().calls, store.batch_stats().decisions);
}

TEST_F(RedisClusterTest, ThreadsRacingOnOneKeyAdmitExactlyTheLimit) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = 200, .window = 60 * kMicrosPerSecond}};
  std::atomic<int> allowed{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 40; ++i) {
        StatusOr<Decision> decision = store::acquire_now(store, ref(limits, "hot"), 1);
        if (!decision.ok()) {
          ++errors;
        } else if (decision->verdict.allowed) {
          ++allowed;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), 200) << "640 requests against a limit of 200";
}

TEST_F(RedisClusterTest, EveryKeyExpiresOnEveryMaster) {
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster_->url());
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  const std::vector<algorithm::Limit> limits = {
      algorithm::Gcra{.rate = 10, .period = kMicrosPerHour, .burst = 10},
      algorithm::SlidingWindow{.limit = 5, .window = 10 * kMicrosPerSecond}};
  for (int s = 0; s < 60; ++s) {
    ASSERT_TRUE(store::acquire_now(store, ref(limits, "s" + std::to_string(s)), 1).ok());
  }
  int keys = 0;
  for (std::size_t i = 0; i < cluster_->nodes().size(); ++i) {
    StatusOr<std::string> role = cluster_->cli(i, {"ROLE"});
    if (!role.ok() || !role->starts_with("master")) continue;
    StatusOr<std::string> listed = cluster_->cli(i, {"--scan", "--pattern", "sluice:*"});
    ASSERT_TRUE(listed.ok());
    std::istringstream lines(*listed);
    for (std::string key; std::getline(lines, key);) {
      if (key.empty()) continue;
      ++keys;
      StatusOr<std::string> ttl = cluster_->cli(i, {"PTTL", key});
      ASSERT_TRUE(ttl.ok());
      EXPECT_GT(std::stoll(*ttl), 0) << key << " has no expiry";
    }
  }
  EXPECT_EQ(keys, 120);
}

// rediss+cluster://: the slot map's TLS ports, MOVED over TLS, decisions on every master.
TEST(RedisClusterTlsTest, DecidesOverTlsOnEveryMaster) {
  StatusOr<std::string> dir = test::make_temp_dir("sluice-cluster-tls-");
  ASSERT_TRUE(dir.ok());
  StatusOr<test::TestCertificates> certificates = test::make_test_certificates(*dir);
  ASSERT_TRUE(certificates.ok()) << certificates.status().to_string();
  StatusOr<std::unique_ptr<RedisCluster>> cluster =
      RedisCluster::start({.masters = 3, .replicas_per_master = 0, .tls = &*certificates});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  std::shared_ptr<redis::Multiplexer> client = cluster_client((*cluster)->tls_url());
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = 2, .window = kMicrosPerHour}};
  int allowed = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    for (int s = 0; s < 50; ++s) {
      StatusOr<Decision> decision =
          store::acquire_now(store, ref(limits, "tls" + std::to_string(s)), 1);
      ASSERT_TRUE(decision.ok()) << decision.status().to_string();
      if (decision->verdict.allowed) ++allowed;
    }
  }
  EXPECT_EQ(allowed, 100);
  EXPECT_EQ(client->stats().masters, 3);
  // Every connection the client holds is a TLS one: on each master, the only client on the plain
  // port is the redis-cli asking, and the client's connections arrived on the TLS port.
  const auto count = [](const std::string& text, const std::string& needle) {
    int n = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1)) {
      ++n;
    }
    return n;
  };
  for (std::size_t i = 0; i < (*cluster)->nodes().size(); ++i) {
    StatusOr<std::string> clients = (*cluster)->cli(i, {"CLIENT", "LIST", "TYPE", "normal"});
    ASSERT_TRUE(clients.ok());
    EXPECT_EQ(
        count(*clients, "laddr=127.0.0.1:" + std::to_string((*cluster)->node(i).port()) + " "), 1)
        << *clients;
    EXPECT_GE(count(*clients, "laddr=127.0.0.1:" + std::to_string((*cluster)->tls_port(i)) + " "),
              1)
        << *clients;
  }
  std::filesystem::remove_all(*dir);
}

// Load: `threads` callers deciding round robin over `subjects`, each decision's outcome kept per
// subject with the time it was answered, until stop().
class Load {
 public:
  Load(RedisStore& store, std::vector<algorithm::Limit> limits, int subjects, int threads)
      : store_(store), limits_(std::move(limits)), outcomes_(static_cast<std::size_t>(subjects)) {
    for (int t = 0; t < threads; ++t) {
      threads_.emplace_back([this, t, subjects] {
        for (int i = t; !stop_.load(std::memory_order_relaxed); i += 7) {
          const int s = i % subjects;
          StatusOr<Decision> decision = store::acquire_now(store_, ref(limits_, subject(s)), 1);
          std::lock_guard lock(mu_);
          Outcome& outcome = outcomes_[static_cast<std::size_t>(s)];
          if (!decision.ok()) {
            ++outcome.errors;
            if (!outcome.first_error) outcome.first_error = SteadyClock::now();
            outcome.last_error = SteadyClock::now();
            outcome.error_text = decision.status().to_string();
          } else {
            ++outcome.answered;
            if (decision->verdict.allowed) ++outcome.allowed;
          }
          ++outcome.attempts;
        }
      });
    }
  }
  ~Load() { stop(); }

  void stop() {
    stop_ = true;
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  static std::string subject(int s) { return "load" + std::to_string(s); }

  struct Outcome {
    int attempts = 0;
    int answered = 0;
    int allowed = 0;
    int errors = 0;
    std::optional<SteadyClock::time_point> first_error;
    std::optional<SteadyClock::time_point> last_error;
    std::string error_text;
  };
  std::vector<Outcome> outcomes() {
    std::lock_guard lock(mu_);
    return outcomes_;
  }

 private:
  RedisStore& store_;
  const std::vector<algorithm::Limit> limits_;
  std::mutex mu_;
  std::vector<Outcome> outcomes_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

TEST(RedisClusterReshardTest, SlotsMovedUnderLoadGiveNoWrongAnswerAndNoOverGrant) {
  std::unique_ptr<RedisCluster> cluster = start_cluster(/*replicas_per_master=*/0);
  ASSERT_NE(cluster, nullptr);
  std::shared_ptr<redis::Multiplexer> client = cluster_client(cluster->url());
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  // Two limits per subject, so a half-migrated subject would need both keys on one node.
  constexpr int kLimit = 40;
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = kLimit, .window = kMicrosPerHour},
      algorithm::SlidingLog{.limit = 1000, .window = kMicrosPerHour}};
  constexpr int kSubjects = 200;
  Load load(store, limits, kSubjects, 6);
  // Move a third of the slots (and their keys) from the first master to the second.
  ASSERT_TRUE(cluster->reshard(cluster->node(0).port(), cluster->node(1).port(), 2000).ok());
  // Load after the move too: every subject asked again once the slots have moved.
  const std::vector<Load::Outcome> moved = load.outcomes();
  ASSERT_TRUE(test::eventually(
      [&] {
        const std::vector<Load::Outcome> now = load.outcomes();
        for (std::size_t s = 0; s < now.size(); ++s) {
          if (now[s].attempts == moved[s].attempts) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  load.stop();
  ASSERT_TRUE(cluster->wait_until_stable().ok());

  int moved_subjects = 0;
  int errors = 0;
  std::string first_error;
  for (int s = 0; s < kSubjects; ++s) {
    const Load::Outcome outcome = load.outcomes()[static_cast<std::size_t>(s)];
    errors += outcome.errors;
    if (first_error.empty()) first_error = outcome.error_text;
    // Exact whatever happened to the slot: never more than the limit, and exactly the limit
    // once enough were asked.
    EXPECT_EQ(outcome.allowed, std::min(outcome.answered, kLimit)) << Load::subject(s);
    StatusOr<std::uint16_t> owner =
        cluster->master_of_slot(slot_of_subject("cluster.policy", Load::subject(s)));
    ASSERT_TRUE(owner.ok());
    if (*owner == cluster->node(1).port() &&
        slot_of_subject("cluster.policy", Load::subject(s)) < 2000) {
      ++moved_subjects;
    }
  }
  EXPECT_EQ(errors, 0) << first_error;
  EXPECT_GT(moved_subjects, 0) << "some subjects' slots moved under load";
  EXPECT_GT(client->stats().redirections, 0U) << "the moves were followed, not avoided";
  // A fresh client sees the moved state: every subject is at its limit on its new node.
  RedisStore fresh(cluster_client(cluster->url()));
  for (int s = 0; s < kSubjects; ++s) {
    const Load::Outcome outcome = load.outcomes()[static_cast<std::size_t>(s)];
    StatusOr<std::vector<algorithm::Verdict>> peek = fresh.inspect(ref(limits, Load::subject(s)));
    ASSERT_TRUE(peek.ok()) << peek.status().to_string();
    EXPECT_EQ((*peek)[0].remaining, kLimit - std::min(outcome.answered, kLimit))
        << Load::subject(s);
  }
}

// SLUICE_CLUSTER_NODE_TIMEOUT_MS sets cluster-node-timeout (default 1000):
// bench/cluster_failover.sh runs this test at several timeouts and collects the printed gap.
TEST(RedisClusterFailoverTest, AKilledMastersSlotsFailOverWhileOtherSlotsNeverDegrade) {
  const char* timeout_env = std::getenv("SLUICE_CLUSTER_NODE_TIMEOUT_MS");
  const std::chrono::milliseconds node_timeout(timeout_env != nullptr ? std::atoi(timeout_env)
                                                                      : 1000);
  StatusOr<std::unique_ptr<RedisCluster>> started =
      RedisCluster::start({.masters = 3, .replicas_per_master = 1, .node_timeout = node_timeout});
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  std::unique_ptr<RedisCluster> cluster = std::move(*started);
  ASSERT_NE(cluster, nullptr);
  std::shared_ptr<redis::Multiplexer> client =
      cluster_client(cluster->url(), {.command_timeout = 500 * kMicrosPerMilli});
  ASSERT_NE(client, nullptr);
  RedisStore store(client);
  const std::vector<algorithm::Limit> limits = {
      algorithm::FixedWindow{.limit = 1'000'000, .window = kMicrosPerHour}};
  constexpr int kSubjects = 60;
  const std::uint16_t victim = cluster->node(0).port();
  std::vector<bool> on_victim;
  for (int s = 0; s < kSubjects; ++s) {
    StatusOr<std::uint16_t> owner =
        cluster->master_of_slot(slot_of_subject("cluster.policy", Load::subject(s)));
    ASSERT_TRUE(owner.ok());
    on_victim.push_back(*owner == victim);
  }
  Load load(store, limits, kSubjects, 6);
  // The load runs: every subject answered before the kill.
  ASSERT_TRUE(test::eventually(
      [&] {
        for (const Load::Outcome& outcome : load.outcomes()) {
          if (outcome.answered == 0) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  const SteadyClock::time_point killed_at = SteadyClock::now();
  ASSERT_TRUE(cluster->node(0).kill_hard().ok());
  // Recovery: the victim's replica is promoted; decisions on its slots answer again by
  // themselves. Wait for a run of answers on every victim subject after the kill.
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30) + 4 * node_timeout;
  std::vector<Load::Outcome> at_kill = load.outcomes();
  bool recovered = false;
  while (!recovered && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::vector<Load::Outcome> now = load.outcomes();
    recovered = true;
    for (int s = 0; s < kSubjects && recovered; ++s) {
      const auto& outcome = now[static_cast<std::size_t>(s)];
      recovered = !on_victim[static_cast<std::size_t>(s)] ||
                  (outcome.errors > 0 && outcome.last_error &&
                   outcome.answered > at_kill[static_cast<std::size_t>(s)].answered + 5 &&
                   SteadyClock::now() - *outcome.last_error > std::chrono::milliseconds(300));
    }
  }
  load.stop();
  ASSERT_TRUE(recovered) << "decisions on the killed master's slots did not recover in 30 s";
  double longest_gap = 0;
  int victim_subjects = 0;
  for (int s = 0; s < kSubjects; ++s) {
    const Load::Outcome outcome = load.outcomes()[static_cast<std::size_t>(s)];
    if (!on_victim[static_cast<std::size_t>(s)]) {
      EXPECT_EQ(outcome.errors, 0)
          << Load::subject(s) << " on a live master: " << outcome.error_text;
      continue;
    }
    ++victim_subjects;
    EXPECT_GT(outcome.errors, 0) << Load::subject(s) << " never saw the outage";
    if (outcome.last_error) {
      longest_gap = std::max(
          longest_gap, std::chrono::duration<double>(*outcome.last_error - killed_at).count());
    }
  }
  EXPECT_GT(victim_subjects, 0);
  // The figure docs/redis.md quotes: seconds of failed decisions against cluster-node-timeout.
  std::printf("failover gap: %.2f s with cluster-node-timeout %lld ms\n", longest_gap,
              static_cast<long long>(node_timeout.count()));
  RecordProperty("failover_gap_ms", static_cast<int>(longest_gap * 1000));

  // After recovery the race is exact again, on a subject of the promoted replica's slots.
  ASSERT_TRUE(cluster->wait_until_stable().ok());
  const std::vector<algorithm::Limit> tight = {
      algorithm::FixedWindow{.limit = 50, .window = kMicrosPerHour}};
  std::string hot;
  for (int s = 0; s < kSubjects && hot.empty(); ++s) {
    if (on_victim[static_cast<std::size_t>(s)]) hot = Load::subject(s);
  }
  std::atomic<int> allowed{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> racers;
  for (int t = 0; t < 8; ++t) {
    racers.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        StatusOr<Decision> decision =
            store::acquire_now(store, ref(tight, hot, "cluster.after"), 1);
        if (!decision.ok()) {
          ++errors;
        } else if (decision->verdict.allowed) {
          ++allowed;
        }
      }
    });
  }
  for (std::thread& racer : racers) racer.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(allowed.load(), 50);
}

}  // namespace
}  // namespace sluice::store
