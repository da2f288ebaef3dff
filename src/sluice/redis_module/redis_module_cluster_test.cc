// sluice.so on a real Redis Cluster (3 masters, a replica each, the module loaded on every node):
// a call is routed by its keys' hash slot (a master that does not own them answers MOVED),
// hundreds of clients racing on one key through its master are admitted exactly the limit, and
// the module's writes reach the replica as the same values.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/redis_module/module_test_support.h"
#include "sluice/redis_module/request.h"
#include "sluice/store/redis/script_set.h"
#include "testing/redis_cluster.h"

namespace sluice::redis_module::test {
namespace {

using namespace algorithm;

std::string acquire(const Limit& limit, std::string_view lease = {}) {
  return store::decision_request(store::ScriptOperation::kAcquire, std::span(&limit, 1), 1,
                                 1'700'000'000'000'000, lease);
}

TEST(ModuleClusterTest, RoutesBySlotAdmitsExactlyTheLimitAndReplicatesItsWrites) {
  auto cluster = sluice::test::RedisCluster::start(
      {.masters = 3, .replicas_per_master = 1, .extra_args = {"--loadmodule", module_path()}});
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  const std::string gcra_key = "race:{hot}:0";
  const std::string lease_key = "race:{hot}:1";
  const auto slot = (*cluster)->cli(0, {"CLUSTER", "KEYSLOT", gcra_key});
  ASSERT_TRUE(slot.ok()) << slot.status().to_string();
  const auto owner = (*cluster)->master_of_slot(std::stoi(*slot));
  ASSERT_TRUE(owner.ok()) << owner.status().to_string();
  const Limit gcra = Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 99};  // 100 now
  const Limit leases = Concurrency{.limit = 100, .lease_ttl = kMicrosPerHour};

  // Another master refuses the call with MOVED to the owner: the keys were found by the getkeys
  // interface, as for EVAL.
  for (std::size_t i = 0; i < 3; ++i) {
    if ((*cluster)->node(i).port() == *owner) continue;
    auto other = Connection::open((*cluster)->node(i).port());
    ASSERT_TRUE(other.ok());
    const Reply moved = (*other)->command({"SLUICE.EVALUATE", "1", gcra_key, acquire(gcra)});
    ASSERT_TRUE(moved.is_error());
    EXPECT_EQ(moved.text.rfind("MOVED", 0), 0u) << moved.text;
  }

  // Each write reaches the replica as it is made (the value after every acquire, not only the
  // last), found on whichever replica serves the slot.
  {
    auto master = Connection::open(*owner);
    ASSERT_TRUE(master.ok());
    std::vector<std::unique_ptr<Connection>> replicas;
    for (std::size_t i = 3; i < (*cluster)->nodes().size(); ++i) {
      auto replica = Connection::open((*cluster)->node(i).port());
      ASSERT_TRUE(replica.ok());
      (*replica)->command({"READONLY"});
      replicas.push_back(std::move(*replica));
    }
    for (int i = 0; i < 3; ++i) {
      SCOPED_TRACE(i);
      const std::vector<Reply> wrote =
          (*master)->pipeline({{"SLUICE.EVALUATE", "1", "seq:{hot}:0", acquire(gcra)},
                               {"WAIT", "1", "5000"},
                               {"GET", "seq:{hot}:0"}});
      ASSERT_EQ(wrote[1].integer, 1);
      int served = 0;
      for (const auto& replica : replicas) {
        const Reply read = replica->command({"GET", "seq:{hot}:0"});
        if (read.is_error()) continue;  // MOVED: the replica of another master
        ++served;
        EXPECT_EQ(read.text, wrote[2].text);
      }
      EXPECT_EQ(served, 1);
    }
  }

  constexpr int kClients = 200;
  constexpr int kCallsEach = 5;
  std::atomic<int> ready{0};
  std::atomic<int> admitted[2] = {0, 0};
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto connection = Connection::open(*owner);
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
                ->pipeline({{"SLUICE.EVALUATE", "1", gcra_key, acquire(gcra)},
                            {"SLUICE.EVALUATE", "1", lease_key, acquire(leases, lease)}});
        count_admitted(replies, admitted, failures);
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(admitted[0].load(), 100);
  EXPECT_EQ(admitted[1].load(), 100);

  // The replica holds what the master holds: the writes were replicated as their effects.
  auto master = Connection::open(*owner);
  ASSERT_TRUE(master.ok());
  const Reply synced = (*master)->command({"WAIT", "1", "5000"});
  EXPECT_EQ(synced.integer, 1);
  const Reply tat = (*master)->command({"GET", gcra_key});
  const Reply held = (*master)->command({"HLEN", lease_key});
  EXPECT_EQ(held.integer, 100);
  int replicas_checked = 0;
  for (std::size_t i = 3; i < (*cluster)->nodes().size(); ++i) {
    auto replica = Connection::open((*cluster)->node(i).port());
    ASSERT_TRUE(replica.ok());
    const std::vector<Reply> read =
        (*replica)->pipeline({{"READONLY"}, {"GET", gcra_key}, {"HLEN", lease_key}});
    if (read[1].is_error()) continue;  // MOVED: the replica of another master
    ++replicas_checked;
    EXPECT_EQ(read[1].text, tat.text);
    EXPECT_EQ(read[2].integer, held.integer);
  }
  EXPECT_EQ(replicas_checked, 1);
}

}  // namespace
}  // namespace sluice::redis_module::test
