#include "sluice/auth/tokens.h"

#include <algorithm>

#include "sluice/auth/secrets.h"
#include "sluice/core/status_macros.h"

namespace sluice::auth {
namespace {

bool is_base62(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  });
}

Status invalid_token() { return {StatusCode::kUnauthenticated, "invalid token"}; }

}  // namespace

StatusOr<IssuedToken> issue_token(std::string_view user, std::string_view description, Micros now,
                                  std::optional<Micros> expires_at) {
  SLUICE_ASSIGN_OR_RETURN(std::string id, random_base62(kTokenIdLength));
  SLUICE_ASSIGN_OR_RETURN(std::string secret, random_base62(kTokenSecretLength));
  IssuedToken issued;
  issued.token = std::string(kTokenPrefix) + id + "_" + secret;
  issued.record = TokenRecord{.id = id,
                              .user = std::string(user),
                              .description = std::string(description),
                              .secret_hash = hash_token_secret(secret),
                              .created_at = now,
                              .expires_at = expires_at};
  return issued;
}

StatusOr<ParsedToken> parse_token(std::string_view token) {
  const Status malformed{StatusCode::kUnauthenticated, "malformed token"};
  if (token.size() != kTokenPrefix.size() + kTokenIdLength + 1 + kTokenSecretLength ||
      token.substr(0, kTokenPrefix.size()) != kTokenPrefix) {
    return malformed;
  }
  token.remove_prefix(kTokenPrefix.size());
  const std::string_view id = token.substr(0, kTokenIdLength);
  const std::string_view secret = token.substr(kTokenIdLength + 1);
  if (token[kTokenIdLength] != '_' || !is_base62(id) || !is_base62(secret)) return malformed;
  return ParsedToken{.id = std::string(id), .secret = std::string(secret)};
}

std::string hash_token_secret(std::string_view secret) { return sha256_hex(secret); }

bool token_secret_matches(const TokenRecord& record, std::string_view secret) {
  const std::string presented = hash_token_secret(secret);
  // A stored hash of the wrong shape (empty, truncated) never matches anything.
  if (presented.size() != 64 || record.secret_hash.size() != 64) return false;
  return constant_time_equals(presented, record.secret_hash);
}

StatusOr<IssuedToken> create_token(AccountRepository& accounts, std::string_view user,
                                   std::string_view description, Micros now,
                                   std::optional<Micros> expires_at,
                                   const TokenInsertChecks& checks) {
  if (expires_at && *expires_at <= now) {
    return invalid_argument("expires_at: must be in the future");
  }
  for (int attempt = 0;; ++attempt) {
    SLUICE_ASSIGN_OR_RETURN(IssuedToken issued, issue_token(user, description, now, expires_at));
    const Status stored = accounts.insert_token(issued.record, checks);
    if (stored.ok()) return issued;
    // AlreadyExists means the random id collided (p ≈ n/62^16); any other error is final.
    if (stored.code() != StatusCode::kAlreadyExists || attempt == 3) return stored;
  }
}

StatusOr<TokenRecord> verify_token(AccountRepository& accounts, std::string_view token,
                                   Micros now) {
  StatusOr<ParsedToken> parsed = parse_token(token);
  if (!parsed.ok()) return invalid_token();
  StatusOr<TokenRecord> record = accounts.get_token(parsed->id);
  if (!record.ok()) {
    if (record.status().code() == StatusCode::kNotFound) return invalid_token();
    return record.status();
  }
  if (record->id != parsed->id || !token_secret_matches(*record, parsed->secret)) {
    return invalid_token();
  }
  if (token_expired(*record, now)) return Status(StatusCode::kUnauthenticated, "token expired");
  return record;
}

}  // namespace sluice::auth
