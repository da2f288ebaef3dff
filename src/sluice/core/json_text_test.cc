#include "sluice/core/json_text.h"

#include <gtest/gtest.h>

#include "sluice/core/utf8.h"

namespace sluice {
namespace {

std::string as_json(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

TEST(JsonTextTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(as_json("plain"), "\"plain\"");
  EXPECT_EQ(as_json(""), "\"\"");
  EXPECT_EQ(as_json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(as_json(std::string_view("\n\t\x01\x1f\0", 5)), "\"\\n\\t\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(as_json("/v1/check?x=1"), "\"/v1/check?x=1\"");
}

TEST(JsonTextTest, KeepsWellFormedUtf8AndReplacesEachIllFormedByte) {
  EXPECT_EQ(as_json("caf\xC3\xA9 \xF0\x9F\x98\x80"), "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
  // A lone continuation byte, a truncated sequence, an overlong '/', a surrogate.
  EXPECT_EQ(as_json("a\x80z"), "\"a\xEF\xBF\xBDz\"");
  EXPECT_EQ(as_json("a\xE2\x82"), "\"a\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xC0\xAF"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\"");
  EXPECT_EQ(as_json("\xED\xA0\x80"), "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
  // Whatever comes in, what goes out is well-formed.
  for (int b = 0; b < 256; ++b) {
    const std::string text = {'x', static_cast<char>(b), static_cast<char>(0xA0)};
    EXPECT_TRUE(is_valid_utf8(as_json(text))) << b;
  }
}

}  // namespace
}  // namespace sluice
