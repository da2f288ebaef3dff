#include "sluice/server/http/admin_auth.h"

#include <algorithm>

#include "sluice/auth/passwords.h"
#include "sluice/auth/secrets.h"
#include "sluice/auth/tokens.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"

namespace sluice::http {
namespace {

constexpr std::size_t kSessionIdLength = 43;  // base62 characters, ≈256 bits
constexpr std::string_view kNotAuthenticated =
    "authentication required: send Authorization: Bearer <token>, or log in with POST "
    "/v1/session";
constexpr std::string_view kBadCredentials = "invalid token or session";
constexpr std::string_view kWrongLogin = "wrong user name or password";

Status unauthenticated(std::string_view message) {
  return {StatusCode::kUnauthenticated, std::string(message)};
}

bool is_safe_method(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::string> request_cookie(const Request& request, std::string_view name) {
  for (const Header& header : request.headers) {
    if (!iequals(header.name, "Cookie")) continue;
    std::string_view rest = header.value;
    while (!rest.empty()) {
      const std::size_t semicolon = rest.find(';');
      const std::string_view pair = trim(rest.substr(0, semicolon));
      rest = semicolon == std::string_view::npos ? std::string_view() : rest.substr(semicolon + 1);
      const std::size_t equals = pair.find('=');
      if (equals != std::string_view::npos && pair.substr(0, equals) == name) {
        return std::string(pair.substr(equals + 1));
      }
    }
  }
  return std::nullopt;
}

AdminAuth::AdminAuth(auth::AccountRepository& accounts, const Clock& clock,
                     AdminAuthOptions options)
    : accounts_(accounts),
      clock_(clock),
      options_(options),
      login_limit_{algorithm::Gcra{
          .rate = 1, .period = options.login_interval, .burst = options.login_burst - 1}},
      address_limit_{algorithm::Gcra{.rate = 1,
                                     .period = options.address_login_interval,
                                     .burst = options.address_login_burst - 1}},
      password_change_limit_{algorithm::Gcra{.rate = 1,
                                             .period = options.password_change_interval,
                                             .burst = options.password_change_burst - 1}},
      login_attempts_(clock, {.max_keys = 100'000, .shards = 4}) {}

StatusOr<Principal> AdminAuth::authenticate(const Request& request) {
  if (const auto authorization = request.header("Authorization")) {
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization->size() <= kBearer.size() ||
        !iequals(authorization->substr(0, kBearer.size()), kBearer)) {
      return unauthenticated("Authorization: only \"Bearer <token>\" is supported");
    }
    SLUICE_ASSIGN_OR_RETURN(
        const auth::TokenRecord token,
        auth::verify_token(accounts_, trim(authorization->substr(kBearer.size())), clock_.now()));
    StatusOr<auth::User> user = accounts_.get_user(token.user);
    // A token whose user is gone is as bad as no token.
    if (user.status().code() == StatusCode::kNotFound) return unauthenticated(kBadCredentials);
    SLUICE_RETURN_IF_ERROR(user.status());
    return Principal{.user = *std::move(user), .token = token.id};
  }
  const std::optional<std::string> cookie = request_cookie(request, kSessionCookie);
  if (!cookie) return unauthenticated(kNotAuthenticated);
  const std::optional<Session> session = find_session(*cookie);
  if (!session) return unauthenticated(kBadCredentials);
  if (!is_safe_method(request.method)) {
    const auto csrf = request.header(kCsrfHeader);
    if (!csrf || !auth::constant_time_equals(*csrf, session->csrf_token)) {
      return Status(StatusCode::kPermissionDenied,
                    "missing or wrong X-CSRF-Token header: a write authenticated by the session "
                    "cookie must echo the csrf_token of its login");
    }
  }
  StatusOr<auth::User> user = accounts_.get_user(session->user);
  if (!user.ok() && user.status().code() != StatusCode::kNotFound) return user.status();
  // Gone, or changed since the login (password, roles, or deleted and re-created under the same
  // name) — here, with the CLI or on another server: the session ends.
  if (!user.ok() || user->generation != session->generation) {
    logout(*cookie);
    return unauthenticated(kBadCredentials);
  }
  return Principal{.user = std::move(*user),
                   .session = *cookie,
                   .csrf_token = session->csrf_token,
                   .password_change_required = session->password_change_required};
}

std::optional<AdminAuth::Session> AdminAuth::find_session(std::string_view id) {
  MutexLock lock(mutex_);
  const auto it = sessions_.find(std::string(id));
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_at <= clock_.now()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

Status AdminAuth::verify_unknown_user(std::string_view password) {
  std::string dummy;
  {
    MutexLock lock(mutex_);
    dummy = dummy_hash_;
  }
  if (dummy.empty()) {
    SLUICE_ASSIGN_OR_RETURN(
        dummy, auth::hash_password("not the password of anyone", options_.password_hash));
    MutexLock lock(mutex_);
    dummy_hash_ = dummy;
  }
  (void)auth::verify_password(password, dummy);
  return unauthenticated(kWrongLogin);
}

std::optional<Micros> AdminAuth::take_attempt(std::string_view policy,
                                              const std::vector<algorithm::Limit>& limits,
                                              std::string subject) {
  StatusOr<Decision> attempt =
      login_attempts_.acquire({.policy = policy, .limits = limits, .subject = subject}, 1);
  if (!attempt.ok()) return options_.login_interval;
  if (attempt->verdict.allowed) return std::nullopt;
  return attempt->verdict.retry_after.value_or(options_.login_interval);
}

std::optional<Micros> AdminAuth::take_login_from(std::string_view peer) {
  return take_attempt("sluice.login.address", address_limit_, std::string(peer));
}

std::optional<Micros> AdminAuth::take_password_guess(std::string_view user, std::string_view peer) {
  // An address holds no space, so "address user" names one pair.
  return take_attempt("sluice.login", login_limit_, std::string(peer) + " " + std::string(user));
}

std::optional<Micros> AdminAuth::take_password_change(std::string_view user) {
  return take_attempt("sluice.password_change", password_change_limit_, std::string(user));
}

LoginResult AdminAuth::login(std::string_view user, std::string_view password,
                             std::string_view peer) {
  // Before the throttle and the lookup: a name the database would match loosely ("admin\0",
  // "admin  ") must not get a throttle budget of its own and then log in as another name.
  if (Status valid = auth::validate_login_name(user, "user"); !valid.ok()) return {.status = valid};
  // Throttle before the expensive hash: guessing is slow, and a flood of logins for one name
  // costs one rejected lookup each, not 64 MiB of argon2.
  if (const std::optional<Micros> wait = take_password_guess(user, peer)) {
    return {.status = {StatusCode::kResourceExhausted,
                       "too many login attempts for this user; try again later"},
            .retry_after = *wait};
  }
  // The user (and its generation) before the hash: should the password change in between, the
  // session records the generation of before and is void at its first use.
  StatusOr<auth::User> account = accounts_.get_user(user);
  if (!account.ok()) {
    if (account.status().code() != StatusCode::kNotFound) return {.status = account.status()};
    return {.status = verify_unknown_user(password)};
  }
  StatusOr<std::string> stored = accounts_.password_hash(account->name);
  if (!stored.ok()) {
    if (stored.status().code() != StatusCode::kNotFound) return {.status = stored.status()};
    return {.status = verify_unknown_user(password)};
  }
  if (Status verified = auth::verify_password(password, *stored); !verified.ok()) {
    return {.status = unauthenticated(kWrongLogin)};
  }
  StatusOr<std::string> id = auth::random_base62(kSessionIdLength);
  StatusOr<std::string> csrf = auth::random_base62(kSessionIdLength);
  if (!id.ok() || !csrf.ok()) return {.status = internal_error("no random bytes for a session")};
  const Micros now = clock_.now();
  LoginResult result{.session = *id,
                     .csrf_token = *csrf,
                     .expires_at = now + options_.session_ttl,
                     .user = std::move(*account),
                     .password_change_required = auth::is_one_time(*stored)};
  MutexLock lock(mutex_);
  make_room_for(result.user.name, now);
  sessions_by_user_[result.user.name].push_back(result.session);
  // The stored name, not the typed one: the principal is who the database says logged in.
  sessions_[result.session] = {.user = result.user.name,
                               .generation = result.user.generation,
                               .csrf_token = result.csrf_token,
                               .expires_at = result.expires_at,
                               .password_change_required = result.password_change_required};
  return result;
}

void AdminAuth::make_room_for(const std::string& user, Micros now) {
  std::deque<std::string>& mine = sessions_by_user_[user];
  const auto* sessions = &sessions_;  // held: the analysis does not follow the lock into a lambda
  std::erase_if(mine, [sessions](const std::string& id) { return !sessions->contains(id); });
  while (options_.max_sessions_per_user > 0 && mine.size() >= options_.max_sessions_per_user) {
    sessions_.erase(mine.front());  // the user's oldest
    mine.pop_front();
  }
  if (sessions_.size() < options_.max_sessions) return;
  std::erase_if(sessions_, [now](const auto& entry) { return entry.second.expires_at <= now; });
  // Still full: the oldest session overall goes (every session lives session_ttl, so the one
  // expiring first is the oldest). Its id stays in its user's list until that user's next login.
  while (!sessions_.empty() && sessions_.size() >= options_.max_sessions) {
    const auto oldest = std::min_element(
        sessions_.begin(), sessions_.end(),
        [](const auto& a, const auto& b) { return a.second.expires_at < b.second.expires_at; });
    sessions_.erase(oldest);
  }
}

void AdminAuth::logout(std::string_view session) {
  MutexLock lock(mutex_);
  sessions_.erase(std::string(session));
}

void AdminAuth::logout_user(std::string_view user) {
  MutexLock lock(mutex_);
  std::erase_if(sessions_, [user](const auto& entry) { return entry.second.user == user; });
  sessions_by_user_.erase(std::string(user));
}

std::string AdminAuth::session_cookie(const LoginResult& login) const {
  const Micros max_age = (login.expires_at - clock_.now()) / kMicrosPerSecond;
  return std::string(kSessionCookie) + "=" + login.session +
         "; Path=/; Max-Age=" + std::to_string(max_age > 0 ? max_age : 0) +
         "; HttpOnly; SameSite=Strict" + (options_.secure_cookies ? "; Secure" : "");
}

std::string AdminAuth::expired_cookie() const {
  return std::string(kSessionCookie) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" +
         (options_.secure_cookies ? "; Secure" : "");
}

}  // namespace sluice::http
