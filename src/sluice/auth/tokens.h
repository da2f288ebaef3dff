// API tokens: "sluice_<id>_<secret>". The id is public (it names the token in listings and
// audit logs, and is how a presented token is found); the secret is 32 base62 characters
// (≈190 bits) from the CSPRNG and is shown exactly once, when the token is issued. Only the
// hex SHA-256 of the secret is stored (a fast hash is enough: the secret has full entropy, so
// unlike a password it cannot be guessed from its hash), and presented secrets are compared
// against it in constant time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::auth {

inline constexpr std::string_view kTokenPrefix = "sluice_";
inline constexpr std::size_t kTokenIdLength = 16;      // base62 characters
inline constexpr std::size_t kTokenSecretLength = 32;  // base62 characters, ≈190 bits

struct ParsedToken {
  std::string id;
  std::string secret;
};

struct IssuedToken {
  std::string token;   // "sluice_<id>_<secret>": give to the user once, never store
  TokenRecord record;  // what the repository stores
};

// A fresh token for `user`, not yet stored, valid until `expires_at` (nullopt: until revoked).
// Internal if the CSPRNG fails.
StatusOr<IssuedToken> issue_token(std::string_view user, std::string_view description, Micros now,
                                  std::optional<Micros> expires_at = std::nullopt);

// Splits a presented token. Unauthenticated ("malformed token") unless it is exactly
// "sluice_" + kTokenIdLength base62 + "_" + kTokenSecretLength base62 characters.
StatusOr<ParsedToken> parse_token(std::string_view token);

// Hex SHA-256 of a token's secret part, as stored in TokenRecord::secret_hash.
std::string hash_token_secret(std::string_view secret);

// Whether `secret` is the one `record` was issued with; constant time in the secret's content.
bool token_secret_matches(const TokenRecord& record, std::string_view secret);

// Issues a token and stores it, retrying on the (astronomically unlikely) id collision.
// Returns the token text, to be shown once. Errors from the repository are passed on.
// InvalidArgument ("expires_at: ...") when `expires_at` is not after `now`.
// `checks` are made in the insert's transaction (TokenInsertChecks).
StatusOr<IssuedToken> create_token(AccountRepository& accounts, std::string_view user,
                                   std::string_view description, Micros now,
                                   std::optional<Micros> expires_at = std::nullopt,
                                   const TokenInsertChecks& checks = {});

// Whether `record` is past its expiry at `now` (expires_at itself is already expired).
inline bool token_expired(const TokenRecord& record, Micros now) {
  return record.expires_at && now >= *record.expires_at;
}

// The record of a presented token: parsed, looked up by id, its secret's hash compared in
// constant time. Unauthenticated ("invalid token") for a malformed, unknown or wrong token —
// the same answer for each, so the reply does not say which ids exist. Unauthenticated
// ("token expired") for the right token at or past its expires_at: only its holder learns that.
// Other repository errors (e.g. Unavailable) are passed on.
StatusOr<TokenRecord> verify_token(AccountRepository& accounts, std::string_view token, Micros now);

}  // namespace sluice::auth
