#include "sluice/auth/tokens.h"

#include <gtest/gtest.h>

#include "sluice/auth/secrets.h"
#include "testing/fake_repositories.h"

namespace sluice::auth {
namespace {

constexpr Micros kNow = 1'700'000'000'000'000;

class TokensTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(accounts_.create_user({.name = "alice"}, "x").ok()); }

  test::FakeAccountRepository accounts_;
};

TEST(Tokens, IssuedTokenHasThePublicIdAndAHashedSecret) {
  StatusOr<IssuedToken> issued = issue_token("alice", "ci deploys", kNow);
  ASSERT_TRUE(issued.ok());
  const std::string& token = issued->token;
  EXPECT_EQ(token.size(), 7u + 16 + 1 + 32);
  EXPECT_EQ(token.rfind("sluice_" + issued->record.id + "_", 0), 0u);
  const std::string secret = token.substr(token.rfind('_') + 1);
  EXPECT_EQ(issued->record.secret_hash, sha256_hex(secret));
  EXPECT_EQ(issued->record.secret_hash.find(secret), std::string::npos);
  EXPECT_EQ(issued->record.user, "alice");
  EXPECT_EQ(issued->record.description, "ci deploys");
  EXPECT_EQ(issued->record.created_at, kNow);
}

TEST(Tokens, TwoTokensShareNeitherIdNorSecret) {
  StatusOr<IssuedToken> a = issue_token("alice", "", kNow);
  StatusOr<IssuedToken> b = issue_token("alice", "", kNow);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->record.id, b->record.id);
  EXPECT_NE(a->record.secret_hash, b->record.secret_hash);
}

TEST(Tokens, ParseSplitsIdAndSecret) {
  const std::string token = "sluice_" + std::string(16, 'A') + "_" + std::string(32, 'z');
  StatusOr<ParsedToken> parsed = parse_token(token);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->id, std::string(16, 'A'));
  EXPECT_EQ(parsed->secret, std::string(32, 'z'));
}

TEST(Tokens, ParseRefusesMalformedTokens) {
  const std::string id(16, 'A');
  const std::string secret(32, 'z');
  for (const std::string& token : {
           std::string(),
           "sluice_" + id + "_" + secret.substr(1),        // short secret
           "sluice_" + id + "_" + secret + "z",            // long secret
           "sluice_" + id + "-" + secret,                  // wrong separator
           "slurp_" + id + "__" + secret,                  // wrong prefix, same length
           "sluice_" + id.substr(1) + "_A" + secret,       // separator moved
           "sluice_" + id + "_" + secret.substr(1) + "/",  // not base62
           "Bearer sluice_" + id + "_" + secret,
       }) {
    SCOPED_TRACE(token);
    EXPECT_EQ(parse_token(token).status().code(), StatusCode::kUnauthenticated);
  }
}

TEST_F(TokensTest, RoundTripThroughTheRepository) {
  StatusOr<IssuedToken> issued = create_token(accounts_, "alice", "laptop", kNow);
  ASSERT_TRUE(issued.ok()) << issued.status().to_string();
  StatusOr<TokenRecord> record = verify_token(accounts_, issued->token, kNow);
  ASSERT_TRUE(record.ok()) << record.status().to_string();
  EXPECT_EQ(record->user, "alice");
  EXPECT_EQ(record->id, issued->record.id);
  EXPECT_EQ(record->description, "laptop");
}

TEST_F(TokensTest, TamperedSecretIsRefused) {
  StatusOr<IssuedToken> issued = create_token(accounts_, "alice", "", kNow);
  ASSERT_TRUE(issued.ok());
  // Flip each character of the secret in turn: none of the variants verifies.
  const std::size_t secret_start = issued->token.size() - kTokenSecretLength;
  for (std::size_t i = secret_start; i < issued->token.size(); ++i) {
    std::string tampered = issued->token;
    tampered[i] = tampered[i] == 'a' ? 'b' : 'a';
    SCOPED_TRACE(tampered);
    const StatusOr<TokenRecord> record = verify_token(accounts_, tampered, kNow);
    EXPECT_EQ(record.status().code(), StatusCode::kUnauthenticated);
    EXPECT_EQ(record.status().message(), "invalid token");
  }
}

TEST_F(TokensTest, SecretOfAnotherTokenIsRefused) {
  StatusOr<IssuedToken> a = create_token(accounts_, "alice", "", kNow);
  StatusOr<IssuedToken> b = create_token(accounts_, "alice", "", kNow);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string swapped =
      "sluice_" + a->record.id + "_" + b->token.substr(b->token.size() - kTokenSecretLength);
  EXPECT_EQ(verify_token(accounts_, swapped, kNow).status().code(), StatusCode::kUnauthenticated);
}

TEST_F(TokensTest, UnknownIdAndMalformedTokensGetTheSameAnswer) {
  StatusOr<IssuedToken> unstored = issue_token("alice", "", kNow);
  ASSERT_TRUE(unstored.ok());
  const Status unknown = verify_token(accounts_, unstored->token, kNow).status();
  const Status malformed = verify_token(accounts_, "not a token", kNow).status();
  EXPECT_EQ(unknown, (Status{StatusCode::kUnauthenticated, "invalid token"}));
  EXPECT_EQ(malformed, unknown);
}

TEST_F(TokensTest, RevokedTokenIsRefused) {
  StatusOr<IssuedToken> issued = create_token(accounts_, "alice", "", kNow);
  ASSERT_TRUE(issued.ok());
  ASSERT_TRUE(accounts_.delete_token(issued->record.id).ok());
  EXPECT_EQ(verify_token(accounts_, issued->token, kNow).status().code(),
            StatusCode::kUnauthenticated);
}

TEST_F(TokensTest, ExpiredTokenIsRefusedFromItsExpiryOnAndOnlyWithTheRightSecret) {
  const Micros expiry = kNow + 3600 * kMicrosPerSecond;
  StatusOr<IssuedToken> issued = create_token(accounts_, "alice", "", kNow, expiry);
  ASSERT_TRUE(issued.ok()) << issued.status().to_string();
  EXPECT_EQ(issued->record.expires_at, expiry);
  EXPECT_TRUE(verify_token(accounts_, issued->token, expiry - 1).ok());
  const Status expired{StatusCode::kUnauthenticated, "token expired"};
  EXPECT_EQ(verify_token(accounts_, issued->token, expiry).status(), expired);
  EXPECT_EQ(verify_token(accounts_, issued->token, expiry + 1).status(), expired);
  // A wrong secret learns nothing about the expiry.
  std::string tampered = issued->token;
  tampered.back() = tampered.back() == 'a' ? 'b' : 'a';
  EXPECT_EQ(verify_token(accounts_, tampered, expiry).status().message(), "invalid token");
}

TEST_F(TokensTest, ExpiryMustBeAfterNow) {
  for (const Micros expiry : {kNow, kNow - 1}) {
    EXPECT_EQ(create_token(accounts_, "alice", "", kNow, expiry).status(),
              invalid_argument("expires_at: must be in the future"));
  }
  EXPECT_TRUE(create_token(accounts_, "alice", "", kNow, kNow + 1).ok());
}

TEST_F(TokensTest, RepositoryOutageIsNotReportedAsABadToken) {
  StatusOr<IssuedToken> issued = create_token(accounts_, "alice", "", kNow);
  ASSERT_TRUE(issued.ok());
  accounts_.fail_with(unavailable("database is down"));
  EXPECT_EQ(verify_token(accounts_, issued->token, kNow).status().code(), StatusCode::kUnavailable);
}

TEST(Tokens, StoredHashOfTheWrongShapeNeverMatches) {
  const TokenRecord empty{.id = "x", .secret_hash = ""};
  EXPECT_FALSE(token_secret_matches(empty, ""));
  const TokenRecord upper{.id = "x", .secret_hash = std::string(64, 'E')};
  EXPECT_FALSE(token_secret_matches(upper, "secret"));
}

TEST_F(TokensTest, CreateTokenForAnUnknownUserFails) {
  EXPECT_EQ(create_token(accounts_, "mallory", "", kNow).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::auth
