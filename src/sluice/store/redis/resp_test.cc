#include "sluice/store/redis/resp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <string>
#include <vector>

#include "sluice/store/redis/multiplexer.h"

namespace sluice::redis {
namespace {

using namespace std::string_literals;

// Parses `wire` with hiredis's reader, as the client does, and converts the first reply.
Reply parse(const std::string& wire) {
  redisReader* reader = redisReaderCreate();
  EXPECT_EQ(redisReaderFeed(reader, wire.data(), wire.size()), REDIS_OK);
  void* raw = nullptr;
  EXPECT_EQ(redisReaderGetReply(reader, &raw), REDIS_OK);
  Reply reply;
  if (raw != nullptr) {
    reply = reply_from_hiredis(*static_cast<const redisReply*>(raw));
    freeReplyObject(raw);
  } else {
    ADD_FAILURE() << "incomplete reply";
  }
  redisReaderFree(reader);
  return reply;
}

TEST(RespTest, ConvertsEveryReplyType) {
  EXPECT_EQ(parse("$-1\r\n"), Reply::nil());
  EXPECT_EQ(parse("*-1\r\n"), Reply::nil());
  EXPECT_EQ(parse(":-42\r\n"), Reply::integer(-42));
  EXPECT_EQ(parse(":9223372036854775807\r\n"), Reply::integer(9223372036854775807));
  EXPECT_EQ(parse("+OK\r\n"), Reply::status("OK"));
  EXPECT_EQ(parse("-ERR boom\r\n"), Reply::error("ERR boom"));
  EXPECT_EQ(parse("$0\r\n\r\n"), Reply::bulk(""));
  EXPECT_EQ(parse("$5\r\na\0b\r\n\r\n"s), Reply::bulk("a\0b\r\n"s));
  EXPECT_EQ(parse("*0\r\n"), Reply::array({}));
  EXPECT_EQ(parse("*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n-ERR inner\r\n"),
            Reply::array({Reply::bulk("a"), Reply::array({Reply::integer(1), Reply::nil()}),
                          Reply::error("ERR inner")}));
}

TEST(RespTest, TypeQueriesMatchTheFactory) {
  EXPECT_TRUE(Reply().is_nil());
  EXPECT_TRUE(Reply::integer(1).is_integer());
  EXPECT_TRUE(Reply::status("OK").is_status());
  EXPECT_TRUE(Reply::error("ERR").is_error());
  EXPECT_TRUE(Reply::bulk("x").is_string());
  EXPECT_TRUE(Reply::array({}).is_array());
  EXPECT_NE(Reply::bulk("OK"), Reply::status("OK"));
  EXPECT_NE(Reply::bulk(""), Reply::nil());
}

TEST(RespTest, FormatsBinarySafeCommandsThatRoundTripThroughTheParser) {
  const std::vector<std::string> args = {"SET", "k\0\r\n"s, "\xff\xfe", ""};
  StatusOr<std::string> wire = format_command(args);
  ASSERT_TRUE(wire.ok());
  EXPECT_EQ(*wire, "*4\r\n$3\r\nSET\r\n$4\r\nk\0\r\n\r\n$2\r\n\xff\xfe\r\n$0\r\n\r\n"s);
  // A command is an array of bulk strings: hiredis's reader reads it back verbatim.
  std::vector<Reply> elements;
  for (const std::string& arg : args) elements.push_back(Reply::bulk(arg));
  EXPECT_EQ(parse(*wire), Reply::array(elements));
}

TEST(RespTest, FormatsCommandsWithManyArguments) {
  std::vector<std::string> args(100, "x");
  args[0] = "RPUSH";
  StatusOr<std::string> wire = format_command(args);
  ASSERT_TRUE(wire.ok());
  EXPECT_EQ(parse(*wire).elements().size(), 100u);
}

TEST(RespTest, RefusesAnEmptyCommand) {
  StatusOr<std::string> wire = format_command({});
  ASSERT_FALSE(wire.ok());
  EXPECT_EQ(wire.status().code(), StatusCode::kInvalidArgument);
}

TEST(RespTest, MapsErrorRepliesToStatusCodes) {
  struct Case {
    std::string message;
    StatusCode code;
  };
  const std::vector<Case> cases = {
      {"NOAUTH Authentication required.", StatusCode::kUnauthenticated},
      {"WRONGPASS invalid username-password pair or user is disabled.",
       StatusCode::kUnauthenticated},
      {"NOPERM this user has no permissions to run the 'set' command",
       StatusCode::kPermissionDenied},
      {"WRONGTYPE Operation against a key holding the wrong kind of value",
       StatusCode::kFailedPrecondition},
      {"OOM command not allowed when used memory > 'maxmemory'.", StatusCode::kResourceExhausted},
      {"NOSCRIPT No matching script. Please use EVAL.", StatusCode::kNotFound},
      {"LOADING Redis is loading the dataset in memory", StatusCode::kUnavailable},
      {"BUSY Redis is busy running a script.", StatusCode::kUnavailable},
      {"MOVED 3999 127.0.0.1:6381", StatusCode::kUnavailable},
      {"ASK 3999 127.0.0.1:6381", StatusCode::kUnavailable},
      {"TRYAGAIN Multiple keys request during rehashing of slot", StatusCode::kUnavailable},
      {"CLUSTERDOWN The cluster is down", StatusCode::kUnavailable},
      {"READONLY You can't write against a read only replica.", StatusCode::kUnavailable},
      {"ERR unknown command 'FOO'", StatusCode::kInvalidArgument},
      {"ERR wrong number of arguments for 'get' command", StatusCode::kInvalidArgument},
      {"ERR user_script:1: Script attempted to access nonexistent global variable 'x'",
       StatusCode::kInternal},
      {"ERR Error running script (call to f_1234): @user_script:1: oops", StatusCode::kInternal},
      {"ERRATIC not an ERR prefix", StatusCode::kInternal},
      {"SOMETHINGNEW we have not seen", StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const Status status = error_reply_status(c.message);
    EXPECT_EQ(status.code(), c.code);
    EXPECT_EQ(status.message(), "redis: " + c.message);
  }
}

TEST(RespTest, DebugStringEscapesBytes) {
  EXPECT_EQ(Reply::array({Reply::bulk("a\"\0\n\xff"s), Reply::integer(7), Reply::nil(),
                          Reply::status("OK"), Reply::error("ERR x")})
                .debug_string(),
            "[\"a\\\"\\x00\\n\\xff\", 7, nil, +OK, -ERR x]");
}

// FIPS 180-4 examples (via FIPS 180-2 appendix A) plus the empty message.
TEST(Sha1Test, MatchesTheStandardsTestVectors) {
  EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(sha1_hex(std::string(1'000'000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1Test, HandlesEveryPaddingBoundary) {
  // Lengths around one block (55/56/63/64/65 bytes) exercise both padding branches; the digests
  // must all differ and stay 40 hex digits.
  std::vector<std::string> digests;
  for (std::size_t length : {55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u}) {
    SCOPED_TRACE(length);
    const std::string digest = sha1_hex(std::string(length, 'x'));
    EXPECT_EQ(digest.size(), 40u);
    for (const std::string& other : digests) EXPECT_NE(digest, other);
    digests.push_back(digest);
  }
  // Known: SHA-1 of 64 'a's.
  EXPECT_EQ(sha1_hex(std::string(64, 'a')), "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}

TEST(ScriptTest, ComputesItsSha1Once) {
  const Script script("return 1");
  EXPECT_EQ(script.source(), "return 1");
  EXPECT_EQ(script.sha1(), sha1_hex("return 1"));
  const Script copy = script;
  EXPECT_EQ(&copy.sha1(), &script.sha1());  // shared, not recomputed
  EXPECT_THAT(script.sha1(), ::testing::MatchesRegex("[0-9a-f]{40}"));
}

}  // namespace
}  // namespace sluice::redis
