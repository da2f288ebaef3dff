// Who is calling the admin API (DESIGN.md §5a): `Authorization: Bearer <token>` for programs, or
// a session cookie from `POST /v1/session` (password login) for the web UI. Cookie-authenticated
// writes must echo the session's CSRF token in `X-CSRF-Token`: a page on another site can make
// the browser send the cookie, but cannot read the token. Sessions live in this process's memory
// (a restart logs everyone out; behind a load balancer use tokens or sticky sessions);
// docs/admin-api.md explains the choices. Thread-safe; the calls that touch the database or hash
// a password block and belong on a WorkQueue.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/auth/accounts.h"
#include "sluice/auth/passwords.h"
#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"
#include "sluice/server/http/message.h"
#include "sluice/status.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::http {

inline constexpr std::string_view kSessionCookie = "sluice_session";
inline constexpr std::string_view kCsrfHeader = "X-CSRF-Token";

struct AdminAuthOptions {
  Micros session_ttl = Micros{12} * 3600 * kMicrosPerSecond;  // absolute lifetime of a login
  bool secure_cookies = false;  // add `Secure` (set it when clients reach Sluice over HTTPS)
  // Sessions in memory at most. When full (after dropping expired ones) a login evicts the
  // oldest session instead of failing: a full table must never lock everyone out (issue 32,
  // L7). Each user holds at most max_sessions_per_user; a login beyond it ends the user's
  // oldest session, so one account's logins cannot fill the table.
  std::size_t max_sessions = 100'000;
  std::size_t max_sessions_per_user = 20;
  // Password guesses per user name and client address: a burst of `login_burst`, then one per
  // `login_interval` (the limiter limiting itself: a gcra limit on an in-process store). Keyed
  // by address too, so failures from elsewhere never lock a user out of their own logins.
  std::int64_t login_burst = 10;
  Micros login_interval = 6 * kMicrosPerSecond;
  // Logins from one client address, whatever the names: checked before anything is queued,
  // looked up or hashed, so one address can neither flood the login queue nor spread its
  // guesses over many names.
  std::int64_t address_login_burst = 30;
  Micros address_login_interval = kMicrosPerSecond;
  // Changes of one's own password (each verifies current_password with argon2), per user name
  // whatever the address: a burst, then one per interval. A user with no roles could otherwise
  // keep the admin threads hashing from as many addresses as it has (issue 32, M7).
  std::int64_t password_change_burst = 10;
  Micros password_change_interval = 30 * kMicrosPerSecond;
  // For the stand-in hash that unknown users are verified against (tests make it cheap).
  auth::PasswordHashOptions password_hash;
};

// An authenticated caller.
struct Principal {
  auth::User user;
  std::string session;  // the session id when authenticated by cookie; empty for a token
  std::string token;    // the token id when authenticated by token
  // The session's CSRF token (empty for a token): GET /v1/session hands it to the console's
  // other tabs and reloads; only same-origin script can read that answer.
  std::string csrf_token;
  // A session opened with a one-time password (auth::kOneTimeMark): until the user chooses a
  // new one, the admin API answers only the calls that do that (AdminApi). Never set for a
  // token. The session ends when the password changes, so this never needs clearing.
  bool password_change_required = false;
};

struct LoginResult {
  Status status;           // OK, Unauthenticated, ResourceExhausted (throttled), other errors
  Micros retry_after = 0;  // ResourceExhausted: when the next attempt may come
  std::string session;     // the cookie value
  std::string csrf_token;  // to send back in X-CSRF-Token
  Micros expires_at = 0;   // Unix µs
  auth::User user;
  // The password was one-time (auth::kOneTimeMark): the user must choose a new one.
  bool password_change_required = false;
};

class AdminAuth {
 public:
  // `accounts` and `clock` must outlive this object.
  AdminAuth(auth::AccountRepository& accounts, const Clock& clock, AdminAuthOptions options = {});

  // The caller of `request`: Unauthenticated (401) without credentials or with a wrong,
  // unknown, expired or revoked one (one message for all, so nothing leaks about which tokens
  // or sessions exist); PermissionDenied (403) for a cookie-authenticated write without the
  // session's CSRF token. A session is also void once its user's generation moved (password or
  // role changed, user deleted or re-created; by anyone, anywhere). A bearer token wins over a
  // cookie. Blocks on the database.
  StatusOr<Principal> authenticate(const Request& request);

  // Checks a password (argon2id) and opens a session. InvalidArgument naming "user" for a name
  // that fails auth::validate_login_name (before any lookup or throttling). The same
  // Unauthenticated answer for an unknown user and a wrong password, after the same work.
  // Blocks for the hash.
  // `peer` is the client's address (Request::peer).
  LoginResult login(std::string_view user, std::string_view password, std::string_view peer);

  // Takes one login attempt from `peer`'s budget (address_login_*). nullopt when allowed; how
  // long to wait when the budget is spent.
  std::optional<Micros> take_login_from(std::string_view peer);

  // Takes one guess at `user`'s password from `peer`: a login does, and so does a password
  // change's current_password, so a borrowed session guesses no faster than a login could.
  // nullopt when allowed; how long to wait when the budget is spent.
  std::optional<Micros> take_password_guess(std::string_view user, std::string_view peer);

  // Takes one own-password change of `user` from its budget (password_change_*), whatever the
  // address. nullopt when allowed; how long to wait when the budget is spent.
  std::optional<Micros> take_password_change(std::string_view user);

  // Ends one session / every session of `user` (password changed, user deleted).
  void logout(std::string_view session);
  void logout_user(std::string_view user);

  // Set-Cookie values that store a login's session / delete it in the browser.
  std::string session_cookie(const LoginResult& login) const;
  std::string expired_cookie() const;

 private:
  struct Session {
    std::string user;             // as stored
    std::int64_t generation = 0;  // the user's at login (auth::User::generation)
    std::string csrf_token;
    Micros expires_at = 0;
    bool password_change_required = false;  // opened with a one-time password
  };
  std::optional<Session> find_session(std::string_view id);
  Status verify_unknown_user(std::string_view password);

  auth::AccountRepository& accounts_;
  const Clock& clock_;
  const AdminAuthOptions options_;
  // One attempt against `limits` for `subject`; the wait when refused (also when the store is
  // full: a throttle that cannot count says no).
  std::optional<Micros> take_attempt(std::string_view policy,
                                     const std::vector<algorithm::Limit>& limits,
                                     std::string subject);

  const std::vector<algorithm::Limit> login_limit_;
  const std::vector<algorithm::Limit> address_limit_;
  const std::vector<algorithm::Limit> password_change_limit_;
  store::MemoryStore login_attempts_;

  Mutex mutex_;  // guards the fields below
  std::unordered_map<std::string, Session> sessions_ SLUICE_GUARDED_BY(mutex_);
  // Per user, its session ids in login order (ids logged out meanwhile are dropped lazily, at the
  // user's next login).
  std::unordered_map<std::string, std::deque<std::string>> sessions_by_user_
      SLUICE_GUARDED_BY(mutex_);
  // Requires mutex_: makes room for one more session of `user`.
  void make_room_for(const std::string& user, Micros now) SLUICE_REQUIRES(mutex_);
  std::string dummy_hash_;  // verified for unknown users so they cost as much as known ones
};

// The value of cookie `name` in the request's Cookie headers, or nullopt.
std::optional<std::string> request_cookie(const Request& request, std::string_view name);

}  // namespace sluice::http
