// The account endpoints of the admin API: users (admins manage them; everyone reads themselves
// and changes their own password), per-app roles and apps (admins), and API tokens (a user's
// own, or anyone's for admins) — the rules of auth/authorize.h.
#include <algorithm>
#include <charconv>
#include <utility>

#include "sluice/auth/account_json.h"
#include "sluice/auth/authorize.h"
#include "sluice/auth/passwords.h"
#include "sluice/auth/tokens.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/server/http/json_fields.h"

namespace sluice::http {
namespace {

using nlohmann::json;

Response no_content() { return {.status = 204, .content_type = ""}; }

Response invalid(std::string_view detail, const std::vector<FieldError>& errors) {
  return problem_response(400, detail, errors);
}

// A field error for a Status naming its field as "field: message".
FieldError field_error(const Status& status, std::string_view field) {
  std::string message = status.message();
  const std::string prefix = std::string(field) + ": ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return {std::string(field), std::move(message)};
}

// 200 with the user as stored now, or the repository's error.
Status respond_user(Exchange& exchange, auth::AccountRepository& accounts,
                    const std::string& name) {
  SLUICE_ASSIGN_OR_RETURN(const auth::User user, accounts.get_user(name));
  return respond_with(exchange, json_response(200, auth::user_to_json(user)));
}

// One page of a listing sorted by `key`: the entries after `cursor` (a key of an earlier
// entry; empty: from the start), at most `limit` of them, and the key to continue after
// (empty when nothing is left). Keys must be unique and in the order of `entries`.
template <typename T, typename Key>
std::pair<std::vector<T>, std::string> page_of(std::vector<T> entries, Key key,
                                               const std::string& cursor, std::size_t limit) {
  auto from = entries.begin();
  if (!cursor.empty()) {
    from = std::upper_bound(entries.begin(), entries.end(), cursor,
                            [&](const std::string& c, const T& entry) { return c < key(entry); });
  }
  std::vector<T> page;
  for (auto it = from; it != entries.end() && page.size() < limit; ++it) page.push_back(*it);
  const bool more = from + static_cast<std::ptrdiff_t>(page.size()) != entries.end();
  std::string next = more && !page.empty() ? key(page.back()) : std::string();
  return {std::move(page), std::move(next)};
}

// A token's place in its listing: "<created_at>.<id>" (µs since the epoch, then the id).
std::string token_cursor(const auth::TokenRecord& token) {
  return std::to_string(token.created_at) + "." + token.id;
}

std::optional<auth::TokenPosition> parse_token_cursor(std::string_view cursor) {
  const std::size_t dot = cursor.find('.');
  if (dot == std::string_view::npos || dot + 1 >= cursor.size()) return std::nullopt;
  Micros at = 0;
  const auto [end, ec] = std::from_chars(cursor.data(), cursor.data() + dot, at);
  if (ec != std::errc() || end != cursor.data() + dot) return std::nullopt;
  return auth::TokenPosition{.created_at = at, .id = std::string(cursor.substr(dot + 1))};
}

}  // namespace

std::optional<std::pair<std::size_t, std::string>> AdminApi::read_page(Exchange& exchange) const {
  std::size_t limit = default_page_size_;
  if (const std::optional<std::string> text = exchange.request().query_param("limit")) {
    std::size_t parsed = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
    if (ec != std::errc() || end != text->data() + text->size() || parsed < 1 ||
        parsed > max_page_size_) {
      exchange.respond(invalid("invalid page", {{"limit", "must be an integer from 1 to " +
                                                              std::to_string(max_page_size_)}}));
      return std::nullopt;
    }
    limit = parsed;
  }
  std::string cursor = exchange.request().query_param("cursor").value_or("");
  if (cursor.size() > 512) {
    exchange.respond(invalid("invalid page", {{"cursor", "is not one this server handed out"}}));
    return std::nullopt;
  }
  return std::pair{limit, std::move(cursor)};
}

Status AdminApi::list_users(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageUsers));
  const auto page_request = read_page(exchange);
  if (!page_request) return already_answered();
  SLUICE_ASSIGN_OR_RETURN(std::vector<auth::User> users, accounts_.list_users());
  std::sort(users.begin(), users.end(),
            [](const auth::User& a, const auth::User& b) { return a.name < b.name; });
  auto [page, next] = page_of(
      std::move(users), [](const auth::User& user) { return user.name; }, page_request->second,
      page_request->first);
  json list = json::array();
  for (const auth::User& user : page) list.push_back(auth::user_to_json(user));
  json answer = {{"users", std::move(list)}};
  if (!next.empty()) answer["next_cursor"] = std::move(next);
  return respond_with(exchange, json_response(200, answer));
}

Status AdminApi::create_user(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageUsers));
  std::optional<json> body = read_object(exchange, {"name", "password", "admin"});
  if (!body) return already_answered();
  auth::User user{.created_at = clock_.now()};
  std::string password;
  std::vector<FieldError> errors;
  read_string(*body, "name", user.name, false, errors);
  read_optional_string(*body, "password", password, errors);
  read_optional_bool(*body, "admin", user.admin, errors);
  if (errors.empty()) {
    if (Status s = auth::validate_user_name(user.name, "name"); !s.ok()) {
      errors.push_back(field_error(s, "name"));
    }
  }
  const bool generated = !body->contains("password");
  if (errors.empty() && !generated) {
    if (Status s = auth::check_password_strength(password, user.name); !s.ok()) {
      errors.push_back(field_error(s, "password"));
    }
  }
  if (!errors.empty()) return respond_with(exchange, invalid("invalid user", errors));
  if (generated) {
    SLUICE_ASSIGN_OR_RETURN(password, auth::generate_password());
  }
  std::optional<auth::KdfGate::Permit> permit = kdf_gate_.try_enter();
  if (!permit) return respond_with(exchange, kdf_busy());
  StatusOr<std::string> hash = auth::hash_password(password, password_hash_);
  permit.reset();
  SLUICE_RETURN_IF_ERROR(hash.status());
  // A generated password is one-time: its user chooses a new one at the first login.
  const std::string stored = generated ? auth::mark_one_time(*hash) : *hash;
  SLUICE_RETURN_IF_ERROR(accounts_.create_user(user, stored));
  json answer = {{"user", auth::user_to_json(user)}};
  // A generated password is shown exactly once, here.
  if (generated) answer["password"] = password;
  Response response = json_response(201, answer);
  response.headers.push_back({"Location", "/v1/users/" + user.name});
  response.headers.push_back({"Cache-Control", "no-store"});
  return respond_with(exchange, std::move(response));
}

Status AdminApi::get_user(Exchange& exchange, const Principal& caller) {
  const std::string name(exchange.param("name"));
  if (name != caller.user.name) {
    SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageUsers));
  }
  return respond_user(exchange, accounts_, name);
}

Status AdminApi::delete_user(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageUsers));
  const std::string name(exchange.param("name"));
  if (Status s = accounts_.delete_user(name); !s.ok()) {
    if (s.code() == StatusCode::kFailedPrecondition) {  // the last admin
      return respond_with(exchange, problem_response(409, s.message()));
    }
    return s;
  }
  auth_.logout_user(name);
  return respond_with(exchange, no_content());
}

Status AdminApi::set_password(Exchange& exchange, const Principal& caller) {
  const std::string name(exchange.param("name"));
  const bool own = name == caller.user.name;
  if (!own) {
    SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageUsers));
  }
  std::optional<json> body =
      read_object(exchange, {"password", "current_password", "revoke_tokens"});
  if (!body) return already_answered();
  std::string password;
  std::string current;
  // On by default: whoever learned the old password may have made tokens with it.
  bool revoke_tokens = true;
  std::vector<FieldError> errors;
  read_string(*body, "password", password, false, errors);
  read_optional_bool(*body, "revoke_tokens", revoke_tokens, errors);
  // Changing one's own password takes the current one, so a borrowed session cannot.
  if (own) read_string(*body, "current_password", current, false, errors);
  if (errors.empty()) {
    if (Status s = auth::check_password_strength(password, name); !s.ok()) {
      errors.push_back(field_error(s, "password"));
    }
  }
  if (!errors.empty()) return respond_with(exchange, invalid("invalid password change", errors));
  if (own) {
    // Per address and user (shared with logins), then per user whatever the address: each
    // guess costs an argon2 run, which a user with no roles must not be able to repeat at will.
    std::optional<Micros> wait = auth_.take_password_guess(name, exchange.request().peer());
    if (!wait) wait = auth_.take_password_change(name);
    if (wait) {
      return respond_with(
          exchange,
          too_many_requests("too many password attempts for this user; try again later", *wait));
    }
  }
  std::string stored;
  if (own) {
    SLUICE_ASSIGN_OR_RETURN(stored, accounts_.password_hash(name));
  }
  // Held for the verification and the new hash only (released before any answer, so a client's
  // next call never finds its own hash's slot still taken): at most kdf_concurrency hashes at
  // once on the admin threads, the rest answered 429 rather than queued on them.
  std::optional<auth::KdfGate::Permit> permit = kdf_gate_.try_enter();
  if (!permit) return respond_with(exchange, kdf_busy());
  if (own && !auth::verify_password(current, stored).ok()) {
    permit.reset();
    return respond_with(exchange, invalid("invalid password change",
                                          {{"current_password", "is not the current password"}}));
  }
  StatusOr<std::string> hash = auth::hash_password(password, password_hash_);
  permit.reset();
  SLUICE_RETURN_IF_ERROR(hash.status());
  // The tokens go in the password's own transaction: a token issued meanwhile under the old
  // password's credentials is either deleted here or refused at its insert (insert_token checks
  // the issuer's generation), never left behind.
  SLUICE_RETURN_IF_ERROR(accounts_
                             .change_password_hash(name, *hash,
                                                   revoke_tokens ? auth::TokenRevocation::kRevokeAll
                                                                 : auth::TokenRevocation::kKeep)
                             .status());
  auth_.logout_user(name);  // every session of the old password ends
  return respond_with(exchange, no_content());
}

Status AdminApi::set_role(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageRoles));
  std::optional<json> body = read_object(exchange, {"role"});
  if (!body) return already_answered();
  std::string text;
  std::vector<FieldError> errors;
  read_string(*body, "role", text, false, errors);
  const std::optional<auth::Role> role = auth::parse_role(text);
  if (errors.empty() && !role) errors.push_back({"role", "must be \"viewer\" or \"owner\""});
  if (!errors.empty()) return respond_with(exchange, invalid("invalid role", errors));
  const std::string name(exchange.param("name"));
  SLUICE_RETURN_IF_ERROR(accounts_.set_role(name, exchange.param("app"), role));
  return respond_user(exchange, accounts_, name);
}

Status AdminApi::remove_role(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageRoles));
  const std::string name(exchange.param("name"));
  SLUICE_RETURN_IF_ERROR(accounts_.set_role(name, exchange.param("app"), std::nullopt));
  return respond_user(exchange, accounts_, name);
}

Status AdminApi::list_apps(Exchange& exchange, const Principal& caller) {
  // Every signed-in user may see which apps exist (policy forms offer them), and who owns and
  // views the apps they have a role on (all of them for admins): the people they work with.
  SLUICE_ASSIGN_OR_RETURN(std::vector<auth::App> apps, accounts_.list_apps());
  SLUICE_ASSIGN_OR_RETURN(std::vector<auth::User> users, accounts_.list_users());
  json list = json::array();
  for (const auth::App& app : apps) {
    json entry = auth::app_to_json(app);
    if (caller.user.admin || caller.user.roles.contains(app.name)) {
      json owners = json::array();
      json viewers = json::array();
      for (const auth::User& user : users) {
        const auto role = user.roles.find(app.name);
        if (role == user.roles.end()) continue;
        (role->second == auth::Role::kOwner ? owners : viewers).push_back(user.name);
      }
      entry["owners"] = std::move(owners);
      entry["viewers"] = std::move(viewers);
    }
    list.push_back(std::move(entry));
  }
  return respond_with(exchange, json_response(200, {{"apps", std::move(list)}}));
}

Status AdminApi::create_app(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageApps));
  std::optional<json> body = read_object(exchange, {"name", "description"});
  if (!body) return already_answered();
  auth::App app{.created_at = clock_.now()};
  std::vector<FieldError> errors;
  read_string(*body, "name", app.name, false, errors);
  read_optional_string(*body, "description", app.description, errors);
  if (errors.empty()) {
    if (Status s = auth::validate_app_name(app.name, "name"); !s.ok()) {
      errors.push_back(field_error(s, "name"));
    }
  }
  if (!errors.empty()) return respond_with(exchange, invalid("invalid app", errors));
  SLUICE_RETURN_IF_ERROR(accounts_.create_app(app));
  return respond_with(exchange, json_response(201, auth::app_to_json(app)));
}

Status AdminApi::delete_app(Exchange& exchange, const Principal& caller) {
  SLUICE_RETURN_IF_ERROR(auth::authorize_admin(caller.user, auth::AdminOperation::kManageApps));
  SLUICE_RETURN_IF_ERROR(accounts_.delete_app(exchange.param("name")));
  return respond_with(exchange, no_content());
}

namespace {

// The expiry a token request asks for: expires_in (a duration from now, "30d") or expires_at
// (an RFC 3339 instant, or µs since the epoch as listings show it), not both; nullopt: none.
std::optional<Micros> read_token_expiry(const json& body, Micros now,
                                        std::vector<FieldError>& errors) {
  const auto in = body.find("expires_in");
  const auto at = body.find("expires_at");
  if (in != body.end() && at != body.end()) {
    errors.push_back({"expires_at", "give expires_in or expires_at, not both"});
    return std::nullopt;
  }
  if (in != body.end()) {
    if (!in->is_string()) {
      errors.push_back(
          {"expires_in", "must be a duration such as \"30d\", not " + std::string(json_type(*in))});
      return std::nullopt;
    }
    StatusOr<Micros> duration = parse_duration(in->get<std::string>());
    if (!duration.ok()) {
      errors.push_back({"expires_in", duration.status().message()});
    } else if (*duration <= 0) {
      errors.push_back({"expires_in", "must be positive"});
    } else if (*duration > kMaxTimestamp - now) {
      errors.push_back({"expires_in", "ends after the year 9999"});
    } else {
      return now + *duration;
    }
    return std::nullopt;
  }
  if (at == body.end()) return std::nullopt;
  std::optional<Micros> instant;
  if (at->is_string()) {
    StatusOr<Micros> parsed = parse_timestamp(at->get<std::string>());
    if (!parsed.ok()) {
      errors.push_back({"expires_at", parsed.status().message()});
      return std::nullopt;
    }
    instant = *parsed;
  } else if (at->is_number_integer() && at->get<std::int64_t>() <= kMaxTimestamp) {
    instant = at->get<std::int64_t>();
  } else {
    errors.push_back({"expires_at",
                      "must be an RFC 3339 instant or microseconds since the "
                      "epoch, not " +
                          std::string(json_type(*at))});
    return std::nullopt;
  }
  if (*instant <= now) {
    errors.push_back({"expires_at", "must be in the future"});
    return std::nullopt;
  }
  return instant;
}

}  // namespace

Status AdminApi::list_tokens(Exchange& exchange, const Principal& caller) {
  const std::string owner = exchange.request().query_param("user").value_or(caller.user.name);
  SLUICE_RETURN_IF_ERROR(auth::authorize_tokens(caller.user, owner));
  const auto page_request = read_page(exchange);
  if (!page_request) return already_answered();
  // The cursor is the last token's position: "<created_at>.<id>".
  std::optional<auth::TokenPosition> after;
  if (!page_request->second.empty()) {
    after = parse_token_cursor(page_request->second);
    if (!after) {
      return respond_with(
          exchange, invalid("invalid page", {{"cursor", "is not one this server handed out"}}));
    }
  }
  // One more than asked: whether a next page exists, without a count over every row.
  SLUICE_ASSIGN_OR_RETURN(std::vector<auth::TokenRecord> tokens,
                          accounts_.list_tokens_after(owner, after, page_request->first + 1));
  const bool more = tokens.size() > page_request->first;
  if (more) tokens.resize(page_request->first);
  const std::vector<auth::TokenRecord>& page = tokens;
  std::string next = more && !page.empty() ? token_cursor(page.back()) : std::string();
  json list = json::array();
  for (const auth::TokenRecord& token : page) list.push_back(auth::token_to_json(token));
  json answer = {{"tokens", std::move(list)}};
  if (!next.empty()) answer["next_cursor"] = std::move(next);
  return respond_with(exchange, json_response(200, answer));
}

Status AdminApi::create_token(Exchange& exchange, const Principal& caller) {
  std::optional<json> body =
      read_object(exchange, {"user", "description", "expires_in", "expires_at"});
  if (!body) return already_answered();
  std::string owner = caller.user.name;
  std::string description;
  std::vector<FieldError> errors;
  read_optional_string(*body, "user", owner, errors);
  read_optional_string(*body, "description", description, errors);
  const Micros now = clock_.now();
  const std::optional<Micros> expires_at = read_token_expiry(*body, now, errors);
  if (description.size() > max_token_description_bytes_) {
    errors.push_back(
        {"description", "must be at most " + std::to_string(max_token_description_bytes_) +
                            " bytes (got " + std::to_string(description.size()) + ")"});
  }
  if (!errors.empty()) return respond_with(exchange, invalid("invalid token request", errors));
  SLUICE_RETURN_IF_ERROR(auth::authorize_tokens(caller.user, owner));
  // Checked at the insert: the caller's credential is still current (M1 of issue 32: a token
  // minted while the password is being changed must not outlive the change).
  // And the owner holds fewer than max_tokens_per_user (M9), counted in the same transaction.
  const auth::TokenInsertChecks checks{
      .issuer = auth::TokenIssuer{.user = caller.user.name, .generation = caller.user.generation},
      .max_tokens_per_user = max_tokens_per_user_};
  SLUICE_ASSIGN_OR_RETURN(
      auth::IssuedToken issued,
      auth::create_token(accounts_, owner, description, now, expires_at, checks));
  json answer = auth::token_to_json(issued.record);
  answer["token"] = issued.token;  // shown exactly once, here
  Response response = json_response(201, answer);
  response.headers.push_back({"Cache-Control", "no-store"});
  return respond_with(exchange, std::move(response));
}

Status AdminApi::delete_token(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(auth::TokenRecord token, accounts_.get_token(exchange.param("id")));
  SLUICE_RETURN_IF_ERROR(auth::authorize_tokens(caller.user, token.user));
  SLUICE_RETURN_IF_ERROR(accounts_.delete_token(token.id));
  return respond_with(exchange, no_content());
}

}  // namespace sluice::http
