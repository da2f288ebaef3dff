#include "sluice/core/key.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace sluice {
namespace {

constexpr std::string_view kPolicyChars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

struct Triple {
  std::string policy;
  std::string subject;
  std::size_t index = 0;
  friend bool operator==(const Triple&, const Triple&) = default;
};

// Inverse of redis_limit_key for valid inputs; its existence is what makes the encoding injective.
std::optional<Triple> decode_limit_key(std::string_view key) {
  constexpr std::string_view kPrefix = "sluice:{";
  if (key.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  key.remove_prefix(kPrefix.size());
  const std::size_t policy_end = key.find(':');    // policies never contain ':'
  const std::size_t index_start = key.rfind(':');  // indexes are digits only
  if (policy_end == std::string_view::npos || index_start <= policy_end + 1 ||
      key[index_start - 1] != '}') {
    return std::nullopt;
  }
  Triple triple{
      .policy = std::string(key.substr(0, policy_end)),
      .subject = std::string(key.substr(policy_end + 1, index_start - 1 - (policy_end + 1)))};
  const std::string_view digits = key.substr(index_start + 1);
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    triple.index = triple.index * 10 + static_cast<std::size_t>(c - '0');
  }
  return triple;
}

// Redis Cluster's rule: if the key has a '{' followed later by a '}' with at least one byte
// between them, only those bytes are hashed; otherwise the whole key is.
std::string_view cluster_hash_input(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

rc::Gen<std::string> valid_policy_name() {
  return rc::gen::resize(kMaxPolicyNameBytes - 1,
                         rc::gen::map(rc::gen::nonEmpty(rc::gen::container<std::string>(
                                          rc::gen::elementOf(std::string(kPolicyChars)))),
                                      [](std::string name) {
                                        name.resize(std::min(name.size(), kMaxPolicyNameBytes));
                                        return name;
                                      }));
}

// Subjects built mostly from the bytes that could confuse the encoding.
rc::Gen<std::string> tricky_subject() {
  return rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::element<char>(
                            ':', '{', '}', '\0', '\n', '\r', '0', '1', 'a', '\xff', '\xc3', ' ')),
                        rc::gen::string<std::string>());
}

TEST(PolicyNameTest, AcceptsOneTo128AllowedCharacters) {
  for (const std::string& name :
       {std::string("a"), std::string("Z"), std::string("0"), std::string("."),
        std::string("orders.create"), std::string("api_v2-write.EU"), std::string(kPolicyChars),
        std::string(128, 'x')}) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(is_valid_policy_name(name));
    EXPECT_TRUE(validate_policy_name(name).ok());
  }
}

TEST(PolicyNameTest, RejectsEmptyName) {
  EXPECT_FALSE(is_valid_policy_name(""));
  EXPECT_EQ(validate_policy_name(""), invalid_argument("name: must not be empty"));
}

TEST(PolicyNameTest, RejectsNameLongerThan128Bytes) {
  EXPECT_FALSE(is_valid_policy_name(std::string(129, 'x')));
  EXPECT_EQ(validate_policy_name(std::string(129, 'x')),
            invalid_argument("name: must be at most 128 characters"));
  EXPECT_FALSE(is_valid_policy_name(std::string(10'000, 'x')));
}

TEST(PolicyNameTest, RejectsEachForbiddenCharacter) {
  for (const std::string& bad : std::vector<std::string>{":",
                                                         "{",
                                                         "}",
                                                         " ",
                                                         "/",
                                                         "*",
                                                         "@",
                                                         "+",
                                                         "\t",
                                                         "\n",
                                                         std::string(1, '\0'),
                                                         "\xff",
                                                         "\xc3\xa9" /* é */,
                                                         "\\",
                                                         "'",
                                                         "\"",
                                                         ";",
                                                         "%",
                                                         "#",
                                                         ","}) {
    const std::string name = "orders" + bad + "create";
    SCOPED_TRACE(testing::PrintToString(name));
    EXPECT_FALSE(is_valid_policy_name(name));
    EXPECT_FALSE(is_valid_policy_name(bad));
    EXPECT_EQ(validate_policy_name(name),
              invalid_argument("name: may contain only letters, digits, '.', '_' and '-'"));
  }
}

TEST(PolicyNameTest, AcceptsExactlyLettersDigitsDotUnderscoreAndHyphen) {
  for (int byte = 0; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    SCOPED_TRACE("byte " + std::to_string(byte));
    const bool allowed = kPolicyChars.find(c) != std::string_view::npos;
    EXPECT_EQ(is_valid_policy_name(std::string(1, c)), allowed);
  }
}

TEST(PolicyNameTest, ErrorsNameTheGivenField) {
  EXPECT_EQ(validate_policy_name("", "policy"), invalid_argument("policy: must not be empty"));
  EXPECT_EQ(validate_policy_name("a b", "apps[2]").message().rfind("apps[2]: ", 0), 0u);
}

TEST(SubjectTest, AcceptsUpTo1024ArbitraryBytes) {
  for (const std::string& subject :
       {std::string(), std::string("alice"), std::string("a:b{c}d\n\r\t"),
        std::string("\0\xff\xfe", 3), std::string(1024, '\0'), std::string(1024, 'x')}) {
    SCOPED_TRACE("size " + std::to_string(subject.size()));
    EXPECT_TRUE(validate_subject(subject).ok());
  }
}

TEST(SubjectTest, RejectsSubjectLongerThan1024Bytes) {
  EXPECT_EQ(validate_subject(std::string(1025, 'x')),
            invalid_argument("key: must be at most 1024 bytes (got 1025)"));
  EXPECT_EQ(validate_subject(std::string(4096, '}'), "subject"),
            invalid_argument("subject: must be at most 1024 bytes (got 4096)"));
}

TEST(KeyEncodingTest, SubjectIdIsPolicyColonSubject) {
  EXPECT_EQ(subject_id("orders.create", "alice"), "orders.create:alice");
  EXPECT_EQ(subject_id("p", ""), "p:");
  EXPECT_EQ(subject_id("p", std::string("a\0:}", 4)), std::string("p:a\0:}", 6));
}

TEST(KeyEncodingTest, RedisLimitKeyLayout) {
  struct Case {
    std::string policy;
    std::string subject;
    std::size_t index;
    std::string key;
  };
  const std::vector<Case> cases = {
      {"orders.create", "alice", 0, "sluice:{orders.create:alice}:0"},
      {"orders.create", "alice", 1, "sluice:{orders.create:alice}:1"},
      {"p", "", 12, "sluice:{p:}:12"},
      {"p", "a:b", 3, "sluice:{p:a:b}:3"},
      {"p", "}{", 0, "sluice:{p:}{}:0"},
      {"p", std::string("\0\n", 2), 7, std::string("sluice:{p:\0\n}:7", 15)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.key));
    EXPECT_EQ(redis_limit_key(c.policy, c.subject, c.index), c.key);
    EXPECT_EQ(redis_limit_key(c.policy, c.subject, c.index),
              "sluice:{" + subject_id(c.policy, c.subject) + "}:" + std::to_string(c.index));
  }
}

TEST(KeyEncodingTest, AllLimitKeysOfOneSubjectShareTheClusterHashTag) {
  for (const std::string& subject :
       std::vector<std::string>{"alice", "", "}", "{", "}{", "{}", "a}b", "a{b", "{x}", "}}:1",
                                ":0}:1", std::string("\n}\0{", 4)}) {
    SCOPED_TRACE(testing::PrintToString(subject));
    const std::string first_key = redis_limit_key("orders", subject, 0);
    const std::string_view tag = cluster_hash_input(first_key);
    EXPECT_EQ(tag.rfind("orders:", 0), 0u) << tag;  // never empty, always starts with the policy
    for (std::size_t index : {1u, 2u, 9u, 10u, 123u}) {
      const std::string key = redis_limit_key("orders", subject, index);
      EXPECT_EQ(cluster_hash_input(key), tag);
    }
  }
}

RC_GTEST_PROP(KeyEncodingProperty, DecodingRecoversPolicySubjectAndIndex, ()) {
  const Triple triple{.policy = *valid_policy_name(),
                      .subject = *tricky_subject(),
                      .index = *rc::gen::inRange<std::size_t>(0, 1'000'000)};
  const std::optional<Triple> decoded =
      decode_limit_key(redis_limit_key(triple.policy, triple.subject, triple.index));
  RC_ASSERT(decoded.has_value());
  RC_ASSERT(*decoded == triple);
}

RC_GTEST_PROP(KeyEncodingProperty, DistinctTriplesGiveDistinctKeys, ()) {
  // Tiny alphabets make near-collisions (a subject ending in "}:1", a policy that is a prefix of
  // another) common, so distinct triples whose concatenations overlap are actually compared.
  const auto policy = rc::gen::container<std::string>(rc::gen::element<char>('a', '.', '1'));
  const auto subject = rc::gen::container<std::string>(
      rc::gen::element<char>(':', '{', '}', '\0', '\n', 'a', '1', '.', '\xff'));
  const auto triple =
      rc::gen::build<Triple>(rc::gen::set(&Triple::policy, rc::gen::nonEmpty(policy)),
                             rc::gen::set(&Triple::subject, subject),
                             rc::gen::set(&Triple::index, rc::gen::inRange<std::size_t>(0, 12)));
  const std::vector<Triple> triples = *rc::gen::container<std::vector<Triple>>(triple);
  std::map<std::string, Triple> seen;
  for (const Triple& t : triples) {
    const auto [it, inserted] = seen.emplace(redis_limit_key(t.policy, t.subject, t.index), t);
    RC_ASSERT(inserted || it->second == t);
  }
}

RC_GTEST_PROP(KeyEncodingProperty, LimitKeysOfOneSubjectHashToOneClusterSlot, ()) {
  const std::string policy = *valid_policy_name();
  const std::string subject = *tricky_subject();
  const std::size_t a = *rc::gen::inRange<std::size_t>(0, 64);
  const std::size_t b = *rc::gen::inRange<std::size_t>(0, 64);
  const std::string key_a = redis_limit_key(policy, subject, a);
  const std::string key_b = redis_limit_key(policy, subject, b);
  const std::string_view tag = cluster_hash_input(key_a);
  RC_ASSERT(tag == cluster_hash_input(key_b));
  RC_ASSERT(tag.substr(0, policy.size() + 1) == policy + ":");
}

}  // namespace
}  // namespace sluice
