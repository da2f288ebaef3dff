#include "sluice/auth/secrets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace sluice::auth {
namespace {

TEST(Secrets, RandomBytesHaveTheRequestedLengthAndDiffer) {
  StatusOr<std::string> a = random_bytes(32);
  StatusOr<std::string> b = random_bytes(32);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
  EXPECT_EQ(random_bytes(0)->size(), 0u);
}

TEST(Secrets, RandomBase62UsesOnlyBase62AndEveryCharacterEventually) {
  StatusOr<std::string> text = random_base62(20'000);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 20'000u);
  const std::set<char> seen(text->begin(), text->end());
  EXPECT_EQ(seen.size(), 62u);  // 20 000 draws miss one of 62 characters with p < 1e-130
  EXPECT_TRUE(std::all_of(text->begin(), text->end(),
                          [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }));
}

TEST(Secrets, Sha256HexMatchesKnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Secrets, ConstantTimeEqualsComparesContentAndLength) {
  EXPECT_TRUE(constant_time_equals("abc", "abc"));
  EXPECT_TRUE(constant_time_equals("", ""));
  EXPECT_FALSE(constant_time_equals("abc", "abd"));
  EXPECT_FALSE(constant_time_equals("abc", "abcd"));
  EXPECT_FALSE(constant_time_equals("", "a"));
}

}  // namespace
}  // namespace sluice::auth
