#include "sluice/store/redis/redis_url.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/store/redis/multiplexer.h"

namespace sluice::redis {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Good {
  std::string url;
  RedisUrl expected;
};

TEST(RedisUrlTest, ParsesEveryAcceptedForm) {
  const std::vector<Good> cases = {
      {"redis://localhost", {.host = "localhost"}},
      {"redis://127.0.0.1:6380", {.host = "127.0.0.1", .port = 6380}},
      {"redis://cache.internal:6379/3", {.host = "cache.internal", .db = 3}},
      {"redis://h/", {.host = "h"}},
      {"REDIS://h:1/0", {.host = "h", .port = 1}},
      {"redis://h:65535", {.host = "h", .port = 65535}},
      {"redis://:s3cret@h", {.host = "h", .password = "s3cret"}},
      {"redis://s3cret@h", {.host = "h", .password = "s3cret"}},
      {"redis://alice:s3cret@h:7000/2",
       {.host = "h", .port = 7000, .username = "alice", .password = "s3cret", .db = 2}},
      {"redis://alice:p%40ss%3Aw%2Fd@h",
       {.host = "h", .username = "alice", .password = "p@ss:w/d"}},
      {"redis://alice:p@ss@h", {.host = "h", .username = "alice", .password = "p@ss"}},
      {"redis://alice:a:b@h", {.host = "h", .username = "alice", .password = "a:b"}},
      {"redis://[::1]", {.host = "::1"}},
      {"redis://[::1]:6390/5", {.host = "::1", .port = 6390, .db = 5}},
  };
  for (const Good& c : cases) {
    SCOPED_TRACE(c.url);
    StatusOr<RedisUrl> parsed = parse_redis_url(c.url);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(parsed->host, c.expected.host);
    EXPECT_EQ(parsed->port, c.expected.port);
    EXPECT_EQ(parsed->username, c.expected.username);
    EXPECT_EQ(parsed->password, c.expected.password);
    EXPECT_EQ(parsed->db, c.expected.db);
  }
}

struct Bad {
  std::string url;
  StatusCode code;
  std::string message_part;
};

TEST(RedisUrlTest, RefusesMalformedUrlsNamingTheProblem) {
  const std::vector<Bad> cases = {
      {"localhost:6379", StatusCode::kInvalidArgument, "missing scheme"},
      {"http://h", StatusCode::kInvalidArgument, "unsupported scheme \"http\""},
      {"redis+sentinel://s:26379", StatusCode::kInvalidArgument, "needs the master's name"},
      {"redis+sentinel://s:26379/m/x", StatusCode::kInvalidArgument, "database \"x\""},
      {"rediss://h?tls_ca", StatusCode::kInvalidArgument, "\"tls_ca\" has no value"},
      {"rediss://h?tls_insecure=1", StatusCode::kInvalidArgument,
       "unknown query parameter \"tls_insecure\""},
      {"rediss://h?tls_ca=%zz", StatusCode::kInvalidArgument, "tls_ca has a '%'"},
      {"redis://h?tls_ca=x", StatusCode::kInvalidArgument, "tls_* only on rediss://"},
      {"redis://h?engine=lua", StatusCode::kInvalidArgument,
       "engine \"lua\" is not one of auto, module, functions, scripts"},
      {"redis://h?clock=local", StatusCode::kInvalidArgument,
       "clock \"local\" is not one of redis, client"},
      {"redis+cluster://a:7000,", StatusCode::kInvalidArgument, "missing host"},
      {"redis+cluster://a:7000,b:x", StatusCode::kInvalidArgument, "port \"x\" is not a number"},
      {"redis+cluster://a:7000/3", StatusCode::kInvalidArgument, "only database 0"},
      {"redis://", StatusCode::kInvalidArgument, "missing host"},
      {"redis://:6379", StatusCode::kInvalidArgument, "missing host"},
      {"redis://h:", StatusCode::kInvalidArgument, "missing port"},
      {"redis://h:abc", StatusCode::kInvalidArgument, "port \"abc\" is not a number"},
      {"redis://h:0", StatusCode::kInvalidArgument, "port 0 is out of range"},
      {"redis://h:65536", StatusCode::kInvalidArgument, "port 65536 is out of range"},
      {"redis://h:99999999999999999999", StatusCode::kInvalidArgument, "out of range"},
      {"redis://h/x", StatusCode::kInvalidArgument, "database \"x\""},
      {"redis://h/-1", StatusCode::kInvalidArgument, "database \"-1\""},
      {"redis://h/1/2", StatusCode::kInvalidArgument, "database \"1/2\""},
      {"redis://h/99999999999", StatusCode::kInvalidArgument,
       "database 99999999999 is out of range"},
      {"redis://h?db=1", StatusCode::kInvalidArgument, "\"db\" is unknown"},
      {"redis://h#x", StatusCode::kInvalidArgument, "fragments"},
      {"redis://::1", StatusCode::kInvalidArgument, "brackets"},
      {"redis://[::1", StatusCode::kInvalidArgument, "closing ']'"},
      {"redis://[::1]x", StatusCode::kInvalidArgument, "after the IPv6 host"},
      {"redis://[zz]", StatusCode::kInvalidArgument, "not an IPv6 address"},
      {"redis://bad host", StatusCode::kInvalidArgument, "not allowed in a host name"},
      {"redis://alice:@h", StatusCode::kInvalidArgument, "needs a password"},
      {"redis://:p%zz@h", StatusCode::kInvalidArgument, "password has a '%'"},
      {"redis://:p%4@h", StatusCode::kInvalidArgument, "password has a '%'"},
      {"redis://a%@h", StatusCode::kInvalidArgument, "password has a '%'"},
      {"redis://u%g:p@h", StatusCode::kInvalidArgument, "username has a '%'"},
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.url);
    StatusOr<RedisUrl> parsed = parse_redis_url(c.url);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), c.code);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message_part));
    EXPECT_THAT(parsed.status().message(), HasSubstr("redis URL"));
  }
}

TEST(RedisUrlTest, AnyUrlChoosesTheEngineAndTheClock) {
  StatusOr<RedisUrl> plain = parse_redis_url("redis://h:7000/2");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->engine, EngineChoice::kAuto);
  EXPECT_EQ(plain->clock, ScriptClock::kRedis);

  StatusOr<RedisUrl> chosen =
      parse_redis_url("redis+cluster://a:7000,b:7001?engine=functions&clock=client");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  EXPECT_EQ(chosen->engine, EngineChoice::kFunctions);
  EXPECT_EQ(chosen->clock, ScriptClock::kCaller);

  StatusOr<RedisUrl> tls = parse_redis_url("rediss://h?tls_ca=/ca.pem&engine=module");
  ASSERT_TRUE(tls.ok()) << tls.status().message();
  EXPECT_EQ(tls->engine, EngineChoice::kModule);
  EXPECT_EQ(tls->tls.ca_file, "/ca.pem");

  const MultiplexerOptions options = client_options_from_url(*chosen);
  EXPECT_EQ(options.engine.choice, EngineChoice::kFunctions);
  EXPECT_EQ(options.engine.clock, ScriptClock::kCaller);
}

TEST(RedisUrlTest, AClusterUrlListsItsSeedNodesInOrder) {
  StatusOr<RedisUrl> parsed =
      parse_redis_url("redis+cluster://alice:pw@10.0.0.1:7000,[::1]:7001,cache-3");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->topology, RedisTopology::kCluster);
  const std::vector<NodeAddress> expected = {
      {"10.0.0.1", 7000}, {"::1", 7001}, {"cache-3", kDefaultRedisPort}};
  EXPECT_EQ(parsed->nodes, expected);
  EXPECT_EQ(parsed->username, "alice");
  EXPECT_EQ(parsed->password, "pw");
  EXPECT_EQ(parsed->nodes[1].text(), "[::1]:7001");

  const MultiplexerOptions options = client_options_from_url(*parsed, {.connections = 3});
  EXPECT_EQ(options.cluster_seeds, expected);
  EXPECT_EQ(options.connections, 3);
  EXPECT_EQ(options.password, "pw");

  StatusOr<RedisUrl> standalone = parse_redis_url("redis://h:7000");
  ASSERT_TRUE(standalone.ok());
  EXPECT_EQ(standalone->topology, RedisTopology::kStandalone);
  EXPECT_TRUE(client_options_from_url(*standalone, options).cluster_seeds.empty())
      << "a standalone URL clears seeds inherited from the base options";
}

TEST(RedisUrlTest, RedissUrlsTurnTlsOnWithTheirFiles) {
  StatusOr<RedisUrl> parsed = parse_redis_url(
      "rediss://:pw@cache:6380/1?tls_ca=%2Fetc%2Fca.pem&tls_cert=c.pem&tls_key=k.pem"
      "&tls_server_name=redis.internal");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_TRUE(parsed->tls.enabled);
  EXPECT_EQ(parsed->tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(parsed->tls.cert_file, "c.pem");
  EXPECT_EQ(parsed->tls.key_file, "k.pem");
  EXPECT_EQ(parsed->tls.server_name, "redis.internal");
  EXPECT_EQ(parsed->db, 1);
  EXPECT_TRUE(client_options_from_url(*parsed).tls.enabled);
  EXPECT_EQ(redacted_url(*parsed), "rediss://:***@cache:6380/1");

  StatusOr<RedisUrl> cluster = parse_redis_url("rediss+cluster://a:7000,b:7001");
  ASSERT_TRUE(cluster.ok()) << cluster.status().to_string();
  EXPECT_TRUE(cluster->tls.enabled);
  EXPECT_EQ(cluster->topology, RedisTopology::kCluster);
  StatusOr<RedisUrl> plain = parse_redis_url("redis://h");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls.enabled);
}

TEST(RedisUrlTest, ASentinelUrlListsItsSentinelsAndNamesTheMaster) {
  StatusOr<RedisUrl> parsed =
      parse_redis_url("redis+sentinel://:pw@s1,s2:5000,[::1]/my%2Dmaster/2");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->topology, RedisTopology::kSentinel);
  const std::vector<NodeAddress> expected = {
      {"s1", kDefaultSentinelPort}, {"s2", 5000}, {"::1", kDefaultSentinelPort}};
  EXPECT_EQ(parsed->nodes, expected);
  EXPECT_EQ(parsed->master_name, "my-master");
  EXPECT_EQ(parsed->db, 2);
  EXPECT_EQ(parsed->password, "pw");
  const MultiplexerOptions options = client_options_from_url(*parsed);
  EXPECT_EQ(options.sentinels, expected);
  EXPECT_EQ(options.sentinel_master, "my-master");
  EXPECT_TRUE(options.cluster_seeds.empty());
  EXPECT_EQ(redacted_url(*parsed),
            "redis+sentinel://:***@s1:26379,s2:5000,[::1]:26379/my-master/2");
}

TEST(RedisUrlTest, RedactedUrlsMaskCredentialsAndListEverySeed) {
  StatusOr<RedisUrl> cluster = parse_redis_url("redis+cluster://alice:pw@a:7000,[::1]:7001");
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(redacted_url(*cluster), "redis+cluster://alice:***@a:7000,[::1]:7001");
  StatusOr<RedisUrl> standalone = parse_redis_url("redis://:pw@h/2");
  ASSERT_TRUE(standalone.ok());
  EXPECT_EQ(redacted_url(*standalone), "redis://:***@h:6379/2");
}

TEST(RedisUrlTest, ErrorsNeverEchoThePassword) {
  for (const std::string url :
       {"redis://alice:hunter2@h:99999", "redis://:hunter2@h/x", "redis://hunter2%zz@h",
        "redis://alice:hunter2@[::1", "redis://:hunter2@h?x"}) {
    SCOPED_TRACE(url);
    StatusOr<RedisUrl> parsed = parse_redis_url(url);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), Not(HasSubstr("hunter2")));
  }
}

TEST(RedisUrlTest, ClientOptionsTakeConnectionFieldsFromTheUrl) {
  StatusOr<RedisUrl> url = parse_redis_url("redis://alice:pw@10.0.0.7:7001/4");
  ASSERT_TRUE(url.ok());
  const MultiplexerOptions options = client_options_from_url(*url, {.connections = 5});
  EXPECT_EQ(options.host, "10.0.0.7");
  EXPECT_EQ(options.port, 7001);
  EXPECT_EQ(options.username, "alice");
  EXPECT_EQ(options.password, "pw");
  EXPECT_EQ(options.db, 4);
  EXPECT_EQ(options.connections, 5);
}

}  // namespace
}  // namespace sluice::redis
