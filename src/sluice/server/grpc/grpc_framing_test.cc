// gRPC framing: length-prefixed messages split anywhere, the refusals (compressed, oversized,
// bad flag), grpc-timeout's units and bounds, grpc-message's percent-encoding.
#include "sluice/server/grpc/grpc_framing.h"

#include <gtest/gtest.h>

namespace sluice::grpc_server {
namespace {

std::string framed(std::string_view payload) {
  std::string out;
  append_message(payload, out);
  return out;
}

TEST(MessageReaderTest, ReassemblesMessagesSplitAtEveryByte) {
  const std::string wire = framed("hello") + framed("") + framed(std::string(300, 'x'));
  for (std::size_t cut = 0; cut <= wire.size(); ++cut) {
    SCOPED_TRACE(cut);
    MessageReader reader(1024);
    std::vector<std::string> out;
    ASSERT_TRUE(reader.append(std::string_view(wire).substr(0, cut), out).ok());
    ASSERT_TRUE(reader.append(std::string_view(wire).substr(cut), out).ok());
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0], "hello");
    EXPECT_EQ(out[1], "");
    EXPECT_EQ(out[2], std::string(300, 'x'));
    EXPECT_TRUE(reader.at_boundary());
  }
}

TEST(MessageReaderTest, RefusesAMessageOverTheLimitFromItsPrefixAlone) {
  MessageReader reader(10);
  std::vector<std::string> out;
  EXPECT_TRUE(reader.append(framed(std::string(10, 'a')), out).ok());
  const std::string prefix = framed(std::string(11, 'a')).substr(0, kMessagePrefixBytes);
  const Status status = reader.append(prefix, out);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("max_message_bytes"), std::string::npos);
  EXPECT_EQ(reader.buffered(), kMessagePrefixBytes);  // nothing of the payload was taken
}

TEST(MessageReaderTest, RefusesCompressedMessagesAndUnknownFlags) {
  std::vector<std::string> out;
  MessageReader compressed(100);
  EXPECT_EQ(compressed.append(std::string("\x01\0\0\0\0", 5), out).code(),
            StatusCode::kUnimplemented);
  MessageReader flagged(100);
  EXPECT_EQ(flagged.append(std::string("\x02\0\0\0\0", 5), out).code(), StatusCode::kInternal);
  EXPECT_FALSE(flagged.append(framed("x"), out).ok());  // no more after an error
  EXPECT_TRUE(out.empty());
}

TEST(GrpcTimeoutTest, ParsesEveryUnitAndRoundsNanosecondsUp) {
  EXPECT_EQ(*parse_grpc_timeout("1H"), kMicrosPerHour);
  EXPECT_EQ(*parse_grpc_timeout("2M"), 2 * kMicrosPerMinute);
  EXPECT_EQ(*parse_grpc_timeout("3S"), 3 * kMicrosPerSecond);
  EXPECT_EQ(*parse_grpc_timeout("20m"), 20 * kMicrosPerMilli);
  EXPECT_EQ(*parse_grpc_timeout("7u"), 7);
  EXPECT_EQ(*parse_grpc_timeout("1n"), 1);
  EXPECT_EQ(*parse_grpc_timeout("1000n"), 1);
  EXPECT_EQ(*parse_grpc_timeout("1001n"), 2);
  EXPECT_EQ(*parse_grpc_timeout("0m"), 0);
  EXPECT_EQ(*parse_grpc_timeout("99999999H"), 99'999'999 * kMicrosPerHour);
}

TEST(GrpcTimeoutTest, RefusesWhatIsNotOneToEightDigitsAndAUnit) {
  for (std::string_view bad : {"", "S", "1", "123456789S", "1s", "-1S", "1.5S", " 1S", "1S "}) {
    SCOPED_TRACE(bad);
    const StatusOr<Micros> parsed = parse_grpc_timeout(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.status().message().find("grpc-timeout"), std::string::npos);
  }
}

TEST(PercentEncodeTest, EncodesPercentAndBytesOutsidePrintableAscii) {
  EXPECT_EQ(percent_encode("plain text: ok"), "plain text: ok");
  EXPECT_EQ(percent_encode("100%"), "100%25");
  EXPECT_EQ(percent_encode("a\nb\r\x7f\xc3\xa9"), "a%0Ab%0D%7F%C3%A9");
}

}  // namespace
}  // namespace sluice::grpc_server
