#include "sluice/core/ascii.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(AsciiTest, IequalsIgnoresAsciiCaseOnly) {
  EXPECT_TRUE(iequals("Content-Type", "content-TYPE"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("redis", "rediss"));
  EXPECT_FALSE(iequals("a-b", "a_b"));
  EXPECT_FALSE(iequals("\xc3\x89", "\xc3\xa9"));  // É and é: not ASCII, compared as bytes
}

TEST(AsciiTest, HexDigitValueOfEachDigitAndOfTheCharactersAroundThem) {
  EXPECT_EQ(hex_digit_value('0'), 0);
  EXPECT_EQ(hex_digit_value('9'), 9);
  EXPECT_EQ(hex_digit_value('a'), 10);
  EXPECT_EQ(hex_digit_value('F'), 15);
  for (char c : {'/', ':', '@', 'G', '`', 'g', '\0', '\xff'}) {
    SCOPED_TRACE(static_cast<int>(c));
    EXPECT_EQ(hex_digit_value(c), -1);
  }
}

TEST(AsciiTest, AllDigitsNeedsAtLeastOneDigitAndNothingElse) {
  EXPECT_TRUE(all_digits("0"));
  EXPECT_TRUE(all_digits("65535"));
  EXPECT_FALSE(all_digits(""));
  EXPECT_FALSE(all_digits("-1"));
  EXPECT_FALSE(all_digits("1 "));
  EXPECT_FALSE(all_digits("0x1"));
}

}  // namespace
}  // namespace sluice
