#include "sluice/auth/passwords.h"

#include <gtest/gtest.h>

namespace sluice::auth {
namespace {

using namespace std::string_literals;

// Cheap parameters: the tests check behaviour, not cost.
constexpr PasswordHashOptions kFast{.time_cost = 1, .memory_kib = 64, .parallelism = 1};

std::string fast_hash(std::string_view password) {
  StatusOr<std::string> encoded = hash_password(password, kFast);
  EXPECT_TRUE(encoded.ok()) << encoded.status().to_string();
  return encoded.ok() ? *encoded : std::string();
}

TEST(PasswordStrength, AcceptsTwelveCharacters) {
  EXPECT_TRUE(check_password_strength("abcdefghijkl").ok());
}

TEST(PasswordStrength, RefusesElevenCharactersNamingTheFieldAndTheRule) {
  const Status status = check_password_strength("abcdefghijk");
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "password: must be at least 12 characters (got 11)");
}

TEST(PasswordStrength, CountsCharactersNotBytes) {
  // 11 characters, 22 bytes: still too short.
  EXPECT_FALSE(check_password_strength("ééééééééééé").ok());
  EXPECT_TRUE(check_password_strength("éééééééééééé").ok());
}

TEST(PasswordStrength, RefusesTheUserName) {
  const Status status = check_password_strength("administrator", "administrator");
  EXPECT_EQ(status.message(), "password: must not be the user name");
}

TEST(PasswordStrength, RefusesMoreThanTheMaximumBytes) {
  EXPECT_TRUE(check_password_strength(std::string(kMaxPasswordBytes, 'x')).ok());
  const Status status = check_password_strength(std::string(kMaxPasswordBytes + 1, 'x'));
  EXPECT_EQ(status.message(), "password: must be at most 1024 bytes");
}

TEST(PasswordHash, EncodesArgon2idWithItsParametersAndAFreshSalt) {
  const std::string a = fast_hash("correct horse battery");
  const std::string b = fast_hash("correct horse battery");
  EXPECT_EQ(a.rfind("$argon2id$v=19$m=64,t=1,p=1$", 0), 0u) << a;
  EXPECT_NE(a, b);  // different salts
  EXPECT_EQ(a.find("correct"), std::string::npos);
}

TEST(PasswordHash, OneTimeMarkIsSeenThroughByVerification) {
  const std::string plain = fast_hash("correct horse battery");
  const std::string marked = mark_one_time(plain);
  EXPECT_TRUE(is_one_time(marked));
  EXPECT_FALSE(is_one_time(plain));
  EXPECT_TRUE(verify_password("correct horse battery", marked).ok());
  EXPECT_EQ(verify_password("wrong horse battery", marked).code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(password_needs_rehash(marked, {.time_cost = 1, .memory_kib = 64}),
            password_needs_rehash(plain, {.time_cost = 1, .memory_kib = 64}));
  // Only a prefix counts: the mark inside a hash is just a malformed hash.
  EXPECT_FALSE(is_one_time("$argon2id$one-time:"));
}

TEST(PasswordHash, DefaultParametersAre64MiBAndThreePasses) {
  StatusOr<std::string> encoded = hash_password("correct horse battery");
  ASSERT_TRUE(encoded.ok());
  EXPECT_EQ(encoded->rfind("$argon2id$v=19$m=65536,t=3,p=1$", 0), 0u) << *encoded;
  EXPECT_TRUE(verify_password("correct horse battery", *encoded).ok());
  EXPECT_FALSE(password_needs_rehash(*encoded));
}

TEST(PasswordHash, VerifiesTheRightPassword) {
  const std::string encoded = fast_hash("correct horse battery");
  EXPECT_TRUE(verify_password("correct horse battery", encoded).ok());
}

TEST(PasswordHash, RefusesAWrongPasswordAsUnauthenticated) {
  const std::string encoded = fast_hash("correct horse battery");
  for (const std::string_view wrong :
       {"correct horse batterY", "correct horse battery ", "", "correct horse batter"}) {
    SCOPED_TRACE(wrong);
    const Status status = verify_password(wrong, encoded);
    EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(status.message(), "wrong password");
  }
}

TEST(PasswordHash, PasswordsWithNulBytesAreNotTruncated) {
  const std::string password("abc\0defghijklmn", 15);
  const std::string encoded = fast_hash(password);
  EXPECT_TRUE(verify_password(password, encoded).ok());
  EXPECT_FALSE(verify_password("abc", encoded).ok());
}

TEST(PasswordHash, RefusesMalformedEncodedHashesAsInvalidArgument) {
  const std::string good = fast_hash("correct horse battery");
  const std::string tail = good.substr(good.find("$m="));  // "$m=64,t=1,p=1$salt$hash"
  const std::string salt_and_hash = tail.substr(tail.find('$', 1));
  struct Case {
    std::string encoded;
    std::string message_part;
  };
  const Case cases[] = {
      {"", "must start with"},
      {"plaintext-password", "must start with"},
      {"$argon2i$v=19" + tail, "\"argon2i\" is not supported"},
      {"$argon2d$v=19" + tail, "\"argon2d\" is not supported"},
      {"$2b$12$abcdefghijklmnopqrstuv", "\"2b\" is not supported"},
      {"$argon2id$v=19", "5 '$'-separated"},
      {"$argon2id$v=16" + tail, "version"},
      {"$argon2id$v=19$m=64,t=1$" + salt_and_hash.substr(1), "m=<KiB>"},
      {"$argon2id$v=19$m=064,t=1,p=1" + salt_and_hash, "m=<KiB>"},
      {"$argon2id$v=19$m=-1,t=1,p=1" + salt_and_hash, "m=<KiB>"},
      {"$argon2id$v=19$m=99999999999,t=1,p=1" + salt_and_hash, "m=<KiB>"},
      {"$argon2id$v=19$m=4194304,t=1,p=1" + salt_and_hash, "m must be"},
      {"$argon2id$v=19$m=64,t=0,p=1" + salt_and_hash, "t must be"},
      {"$argon2id$v=19$m=64,t=1000,p=1" + salt_and_hash, "t must be"},
      {"$argon2id$v=19$m=64,t=1,p=0" + salt_and_hash, "p must be"},
      {"$argon2id$v=19$m=64,t=1,p=1$$" + good.substr(good.rfind('$') + 1), "salt"},
      {"$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$not*base64", "hash"},
      {"$argon2id$v=19$m=64,t=1,p=1$c2FsdA$aGFzaGhhc2hoYXNoaGFzaA", "Salt is too short"},
      {good + "$extra", "5 '$'-separated"},
      {"$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ\0$x"s, "NUL"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.encoded);
    const Status status = verify_password("correct horse battery", c.encoded);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.to_string();
    EXPECT_NE(status.message().find(c.message_part), std::string::npos) << status.message();
    EXPECT_TRUE(password_needs_rehash(c.encoded));
  }
}

TEST(PasswordHash, TamperedHashNeverVerifies) {
  std::string encoded = fast_hash("correct horse battery");
  char& last = encoded[encoded.size() - 2];
  last = last == 'A' ? 'B' : 'A';
  EXPECT_FALSE(verify_password("correct horse battery", encoded).ok());
}

TEST(PasswordHash, RefusesBadOptions) {
  EXPECT_EQ(hash_password("x", {.time_cost = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hash_password("x", {.memory_kib = 4}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hash_password("x", {.salt_bytes = 4}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hash_password(std::string(kMaxPasswordBytes + 1, 'x'), kFast).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PasswordHash, NeedsRehashWhenParametersChanged) {
  const std::string encoded = fast_hash("correct horse battery");
  EXPECT_FALSE(password_needs_rehash(encoded, kFast));
  EXPECT_TRUE(password_needs_rehash(encoded, {.time_cost = 2, .memory_kib = 64}));
  EXPECT_TRUE(password_needs_rehash(encoded, {.time_cost = 1, .memory_kib = 128}));
  EXPECT_TRUE(password_needs_rehash(encoded));
}

TEST(GeneratedPassword, IsLongRandomAndStrongEnough) {
  StatusOr<std::string> a = generate_password();
  StatusOr<std::string> b = generate_password();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->size(), 20u);
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(check_password_strength(*a, "admin").ok());
}

}  // namespace
}  // namespace sluice::auth
