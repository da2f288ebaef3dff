#include "sluice/core/percent_encoding.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace sluice {
namespace {

TEST(PercentEncodingTest, EncodeKeepsUnreservedBytesAndEscapesTheRestInUpperCase) {
  EXPECT_EQ(percent_encode("aZ0-_.~"), "aZ0-_.~");
  EXPECT_EQ(percent_encode("p@ss:w/rd %"), "p%40ss%3Aw%2Frd%20%25");
  EXPECT_EQ(percent_encode(std::string("\0\xff", 2)), "%00%FF");
}

TEST(PercentEncodingTest, DecodeReadsEveryEscapeInEitherCaseAndReversesEncode) {
  EXPECT_EQ(percent_decode("p%40ss%3aw%2Frd"), "p@ss:w/rd");
  EXPECT_EQ(percent_decode("a+b"), "a+b");
  EXPECT_EQ(percent_decode(""), "");
  const std::string every_byte = [] {
    std::string bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
    return bytes;
  }();
  EXPECT_EQ(percent_decode(percent_encode(every_byte)), every_byte);
}

TEST(PercentEncodingTest, DecodeRefusesAPercentWithoutTwoHexDigits) {
  for (const char* text : {"%", "100%", "%4", "a%4", "%zz", "%4g", "%%41"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(percent_decode(text), std::nullopt);
  }
}

TEST(PercentEncodingTest, LenientDecodeLeavesMalformedEscapesAlone) {
  EXPECT_EQ(percent_decode_lenient("a%2Fb"), "a/b");
  EXPECT_EQ(percent_decode_lenient("100%"), "100%");
  EXPECT_EQ(percent_decode_lenient("%zz%4"), "%zz%4");
  EXPECT_EQ(percent_decode_lenient("a+b"), "a+b");
  EXPECT_EQ(percent_decode_lenient("a+b", PlusSign::kSpace), "a b");
  EXPECT_EQ(percent_decode_lenient("%2B+", PlusSign::kSpace), "+ ");
}

}  // namespace
}  // namespace sluice
