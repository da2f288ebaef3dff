// Unit tests of the pure cluster vocabulary: hash slots, slot maps from CLUSTER SHARDS and
// CLUSTER SLOTS replies, and redirections. (cluster_test.cc checks slots against a real server.)
#include "sluice/store/redis/cluster_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sluice/store/redis/hash_slot.h"

namespace sluice::redis {
namespace {

using ::testing::HasSubstr;

TEST(HashSlotTest, Crc16IsXmodem) {
  EXPECT_EQ(crc16_xmodem("123456789"), 0x31C3);  // the standard check value
  EXPECT_EQ(crc16_xmodem(""), 0);
}

TEST(HashSlotTest, HashTagsFollowRedisRules) {
  EXPECT_EQ(key_hash_slot("foo"), 12182);  // as CLUSTER KEYSLOT foo answers
  EXPECT_EQ(key_hash_slot("{user1000}.following"), key_hash_slot("{user1000}.followers"));
  EXPECT_EQ(key_hash_slot("{user1000}.following"), key_hash_slot("user1000"));
  // Empty tag: the whole key is hashed.
  EXPECT_EQ(key_hash_slot("foo{}{bar}"), crc16_xmodem("foo{}{bar}") % kClusterSlots);
  // Only the first '{' counts, up to the first '}' after it.
  EXPECT_EQ(key_hash_slot("foo{{bar}}zap"), key_hash_slot("{bar"));
  EXPECT_EQ(key_hash_slot("foo{bar}{zap}"), key_hash_slot("bar"));
  // No closing brace: the whole key.
  EXPECT_EQ(key_hash_slot("foo{bar"), crc16_xmodem("foo{bar") % kClusterSlots);
}

Reply map(std::vector<std::pair<std::string, Reply>> fields) {
  std::vector<Reply> items;
  for (auto& [key, value] : fields) {
    items.push_back(Reply::bulk(key));
    items.push_back(std::move(value));
  }
  return Reply::array(std::move(items));
}

Reply node(std::string endpoint, std::string ip, std::int64_t port, std::string role) {
  return map({{"id", Reply::bulk("x")},
              {"port", Reply::integer(port)},
              {"ip", Reply::bulk(std::move(ip))},
              {"endpoint", Reply::bulk(std::move(endpoint))},
              {"role", Reply::bulk(std::move(role))},
              {"health", Reply::bulk("online")}});
}

TEST(ClusterTopologyTest, ShardsGiveEachRangeToItsMaster) {
  const Reply reply = Reply::array({
      map({{"slots", Reply::array({Reply::integer(0), Reply::integer(99), Reply::integer(200),
                                   Reply::integer(299)})},
           {"nodes", Reply::array({node("10.0.0.2", "10.0.0.2", 7001, "replica"),
                                   node("10.0.0.1", "10.0.0.1", 7000, "master")})}}),
      // An unknown endpoint falls back to the ip, an empty ip to the node asked.
      map({{"slots", Reply::array({Reply::integer(100), Reply::integer(199)})},
           {"nodes", Reply::array({node("?", "", 7002, "master")})}}),
      // No slots: skipped.
      map({{"slots", Reply::array({})},
           {"nodes", Reply::array({node("10.0.0.9", "10.0.0.9", 7009, "master")})}}),
  });
  StatusOr<std::vector<SlotRange>> ranges = slot_ranges_from_shards(reply, {"seed", 7100});
  ASSERT_TRUE(ranges.ok()) << ranges.status().to_string();
  ASSERT_EQ(ranges->size(), 3U);
  EXPECT_EQ((*ranges)[0].first, 0);
  EXPECT_EQ((*ranges)[0].last, 99);
  EXPECT_EQ((*ranges)[0].master, (NodeAddress{"10.0.0.1", 7000}));
  EXPECT_EQ((*ranges)[1].first, 200);
  EXPECT_EQ((*ranges)[2].master, (NodeAddress{"seed", 7002}));
}

TEST(ClusterTopologyTest, ATlsClientTakesTheMastersTlsPort) {
  Reply master = node("10.0.0.1", "10.0.0.1", 7000, "master");
  master.elements().push_back(Reply::bulk("tls-port"));
  master.elements().push_back(Reply::integer(7400));
  const Reply reply =
      Reply::array({map({{"slots", Reply::array({Reply::integer(0), Reply::integer(16383)})},
                         {"nodes", Reply::array({master})}})});
  StatusOr<std::vector<SlotRange>> plain = slot_ranges_from_shards(reply, {"seed", 7000});
  StatusOr<std::vector<SlotRange>> tls = slot_ranges_from_shards(reply, {"seed", 7000}, true);
  ASSERT_TRUE(plain.ok() && tls.ok());
  EXPECT_EQ((*plain)[0].master.port, 7000);
  EXPECT_EQ((*tls)[0].master.port, 7400);
}

TEST(ClusterTopologyTest, MalformedShardsAreRefusedNamingTheProblem) {
  const NodeAddress asked{"seed", 7000};
  EXPECT_THAT(slot_ranges_from_shards(Reply::integer(1), asked).status().message(),
              HasSubstr("not an array"));
  const Reply odd = Reply::array(
      {map({{"slots", Reply::array({Reply::integer(1)})}, {"nodes", Reply::array({})}})});
  EXPECT_THAT(slot_ranges_from_shards(odd, asked).status().message(), HasSubstr("odd"));
  const Reply out_of_range =
      Reply::array({map({{"slots", Reply::array({Reply::integer(0), Reply::integer(16384)})},
                         {"nodes", Reply::array({node("h", "h", 7000, "master")})}})});
  EXPECT_THAT(slot_ranges_from_shards(out_of_range, asked).status().message(),
              HasSubstr("0-16383"));
  const Reply bad_port =
      Reply::array({map({{"slots", Reply::array({Reply::integer(0), Reply::integer(1)})},
                         {"nodes", Reply::array({node("h", "h", 70000, "master")})}})});
  EXPECT_THAT(slot_ranges_from_shards(bad_port, asked).status().message(), HasSubstr("port"));
}

TEST(ClusterTopologyTest, SlotsRepliesOfOlderServersParseToo) {
  const Reply reply = Reply::array({
      Reply::array(
          {Reply::integer(0), Reply::integer(5460),
           Reply::array({Reply::bulk("10.0.0.1"), Reply::integer(7000), Reply::bulk("id1")}),
           Reply::array({Reply::bulk("10.0.0.4"), Reply::integer(7003), Reply::bulk("id4")})}),
      Reply::array({Reply::integer(5461), Reply::integer(16383),
                    Reply::array({Reply::bulk(""), Reply::integer(7001), Reply::bulk("id2")})}),
  });
  StatusOr<std::vector<SlotRange>> ranges = slot_ranges_from_slots(reply, {"seed", 7001});
  ASSERT_TRUE(ranges.ok()) << ranges.status().to_string();
  ASSERT_EQ(ranges->size(), 2U);
  EXPECT_EQ((*ranges)[0].master, (NodeAddress{"10.0.0.1", 7000}));
  EXPECT_EQ((*ranges)[1].first, 5461);
  EXPECT_EQ((*ranges)[1].master, (NodeAddress{"seed", 7001}));
  EXPECT_FALSE(slot_ranges_from_slots(Reply::array({Reply::array({Reply::integer(0)})}), {}).ok());
}

TEST(ClusterTopologyTest, RedirectionsAreParsedAndOtherErrorsAreNot) {
  const std::optional<Redirection> moved = parse_redirection("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->kind, Redirection::Kind::kMoved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->to, (NodeAddress{"127.0.0.1", 6381}));

  const std::optional<Redirection> ask = parse_redirection("ASK 12182 ::1:7002");
  ASSERT_TRUE(ask.has_value());
  EXPECT_EQ(ask->kind, Redirection::Kind::kAsk);
  EXPECT_EQ(ask->to, (NodeAddress{"::1", 7002}));

  const std::optional<Redirection> unknown_host = parse_redirection("MOVED 1 :7000");
  ASSERT_TRUE(unknown_host.has_value());
  EXPECT_EQ(unknown_host->to.host, "") << "left for the caller: the node it asked";

  for (const char* other : {"ERR unknown command", "MOVED", "MOVED x h:1", "MOVED 16384 h:1",
                            "MOVED 1 h:0", "MOVED 1 h", "ASK 1 h:99999", "TRYAGAIN x"}) {
    EXPECT_FALSE(parse_redirection(other).has_value()) << other;
  }
  EXPECT_TRUE(is_retryable_cluster_error("TRYAGAIN Multiple keys request during rehashing"));
  EXPECT_TRUE(is_retryable_cluster_error("CLUSTERDOWN The cluster is down"));
  EXPECT_FALSE(is_retryable_cluster_error("MOVED 1 h:1"));
}

}  // namespace
}  // namespace sluice::redis
