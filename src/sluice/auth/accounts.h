// Accounts: users, API tokens, apps and per-app roles (DESIGN.md §4), stored in the same SQL
// database as the policies. Only hashes of secrets are stored: passwords as argon2id encoded
// strings, tokens as SHA-256 of their secret part. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::auth {

// Per app: a viewer reads its policies; an owner also creates, updates and deletes them.
enum class Role { kViewer, kOwner };

struct User {
  std::string name;
  bool admin = false;                 // manages everything
  std::map<std::string, Role> roles;  // app -> role
  Micros created_at = 0;
  // Moves on every password or role change, and differs between a deleted user and a later one
  // of the same name (repositories draw it from a counter that never repeats). A login session
  // records it and is void once the stored user's differs, wherever the change was made (the
  // CLI, another server). Set by the repository; ignored by create_user.
  std::int64_t generation = 0;
};

struct App {
  std::string name;  // same charset as policy names
  std::string description;
  Micros created_at = 0;
};

struct TokenRecord {
  std::string id;  // public part of the token, unique
  std::string user;
  std::string description;
  std::string secret_hash;  // hex SHA-256 of the secret part
  Micros created_at = 0;
  // From this instant on the token is refused like a revoked one; nullopt: never expires.
  std::optional<Micros> expires_at;
};

// What a password change does to the user's API tokens.
enum class TokenRevocation { kKeep, kRevokeAll };

// The credential a token is issued under, as the caller was authenticated: the user and the
// generation (User::generation) its session or token was checked against.
struct TokenIssuer {
  std::string user;
  std::int64_t generation = 0;
};

// What is checked in the same transaction as a token's insert, so no concurrent change slips
// between the check and the insert.
struct TokenInsertChecks {
  // Refused (Aborted) unless the issuer's generation is still the one given: a password change,
  // role change or deletion committed after the issuer authenticated voids the credential, and a
  // token it minted meanwhile must not outlive it. nullopt: not checked (the CLI, which works on
  // the database directly).
  std::optional<TokenIssuer> issuer;
  // Refused (ResourceExhausted) when the token's user already holds this many; 0: no cap.
  std::size_t max_tokens_per_user = 0;
};

// A token's place in a listing: oldest first, then by id.
struct TokenPosition {
  Micros created_at = 0;
  std::string id;
};

class AccountRepository {
 public:
  virtual ~AccountRepository() = default;

  // AlreadyExists / NotFound as the names suggest. Every lookup by user name matches the name
  // exactly, byte for byte, on every backend (no trailing-space padding, no case folding, no
  // truncation at NUL): a name that is not stored exactly as given is NotFound. create_user
  // refuses names that fail validate_login_name, so every stored user can log in.
  virtual Status create_user(const User& user, std::string_view password_hash) = 0;
  virtual StatusOr<User> get_user(std::string_view name) = 0;
  virtual StatusOr<std::string> password_hash(std::string_view user) = 0;
  // Stores a new password hash and moves the user's generation (ending its sessions); with
  // kRevokeAll also deletes every token of the user in the same transaction, so no token is
  // left that was made with the old password. Returns how many tokens were revoked.
  virtual StatusOr<std::size_t> change_password_hash(std::string_view user,
                                                     std::string_view password_hash,
                                                     TokenRevocation tokens) = 0;
  Status set_password_hash(std::string_view user, std::string_view password_hash) {
    return change_password_hash(user, password_hash, TokenRevocation::kKeep).status();
  }
  virtual StatusOr<std::vector<User>> list_users() = 0;
  // Also deletes the user's tokens and roles. Never the last admin: FailedPrecondition, decided
  // in the same transaction as the delete.
  virtual Status delete_user(std::string_view name) = 0;
  virtual StatusOr<std::size_t> count_admins() = 0;
  // nullopt removes the user's role on the app. NotFound for unknown user or app.
  virtual Status set_role(std::string_view user, std::string_view app,
                          std::optional<Role> role) = 0;

  virtual Status create_app(const App& app) = 0;
  virtual StatusOr<std::vector<App>> list_apps() = 0;
  virtual Status delete_app(std::string_view name) = 0;

  // Stores `token` if `checks` hold at the insert (see TokenInsertChecks). NotFound for an
  // unknown user, AlreadyExists for a taken id.
  virtual Status insert_token(const TokenRecord& token, const TokenInsertChecks& checks) = 0;
  Status create_token(const TokenRecord& token) { return insert_token(token, {}); }
  virtual StatusOr<TokenRecord> get_token(std::string_view id) = 0;
  virtual StatusOr<std::vector<TokenRecord>> list_tokens(std::string_view user) = 0;
  // One page of `user`'s tokens, ordered by (created_at, id) as the database orders them: at
  // most `limit`, those after `after` (nullopt: from the first). Reads only the page's rows, so
  // a listing costs the page, however many (or large) rows the user has.
  virtual StatusOr<std::vector<TokenRecord>> list_tokens_after(
      std::string_view user, const std::optional<TokenPosition>& after, std::size_t limit) = 0;
  virtual Status delete_token(std::string_view id) = 0;
  // Revokes every token of `user` (none is not an error); returns how many. NotFound for an
  // unknown user.
  virtual StatusOr<std::size_t> delete_user_tokens(std::string_view user) = 0;
};

// What delete_user answers for the last admin, from every repository.
inline Status last_admin_refusal(std::string_view name) {
  return {StatusCode::kFailedPrecondition,
          "refused: " + std::string(name) + " is the last admin; make another first"};
}

// What insert_token answers when `user` already holds `cap` tokens, from every repository.
inline Status too_many_tokens(std::string_view user, std::size_t cap) {
  return {StatusCode::kResourceExhausted,
          "user " + std::string(user) + " already holds " + std::to_string(cap) +
              " API tokens (max_tokens_per_user); revoke one first"};
}

// InvalidArgument naming `field` unless `name` is 1-128 of [A-Za-z0-9._-] (the policy-name
// alphabet, safe in URLs, logs and Redis keys). "*" is not an app: it means any app.
Status validate_app_name(std::string_view name, std::string_view field);
// As validate_app_name, with '@' allowed too, for e-mail-like user names.
Status validate_user_name(std::string_view name, std::string_view field);

// The looser rule every login attempt and every stored user name passes (validate_user_name is
// the stricter one for names created through the API and the CLI): 1-255 bytes of UTF-8 with
// no control characters (C0, DEL, C1; NUL included) and no whitespace at either end.
// InvalidArgument naming `field` otherwise. Checked before a login is looked up or throttled,
// because databases compare such variants loosely (PostgreSQL's client library ends a string at
// NUL, MariaDB's PAD SPACE collations ignore trailing spaces) and each variant would otherwise
// get a throttle budget of its own.
inline constexpr std::size_t kMaxLoginNameBytes = 255;
Status validate_login_name(std::string_view name, std::string_view field);

}  // namespace sluice::auth
