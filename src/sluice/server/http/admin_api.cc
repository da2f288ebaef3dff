#include "sluice/server/http/admin_api.h"

#include <algorithm>

#include "sluice/auth/account_json.h"
#include "sluice/auth/passwords.h"
#include "sluice/core/status_macros.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/json_fields.h"

namespace sluice::http {

using nlohmann::json;

AdminApi::AdminApi(policy::PolicyRepository& policies, auth::AccountRepository& accounts,
                   store::Store& store, AdminAuth& auth, const Clock& clock,
                   std::function<void()> policies_changed, AdminApiOptions options)
    : policies_(policies),
      accounts_(accounts),
      store_(store),
      auth_(auth),
      clock_(clock),
      policies_changed_(std::move(policies_changed)),
      password_hash_(options.password_hash),
      decisions_(options.decisions),
      subject_cleared_(std::move(options.subject_cleared)),
      history_(options.history),
      max_token_description_bytes_(options.max_token_description_bytes),
      max_tokens_per_user_(options.max_tokens_per_user),
      default_page_size_(std::max<std::size_t>(options.default_page_size, 1)),
      max_page_size_(std::max(options.max_page_size, options.default_page_size)),
      kdf_gate_(std::max<std::size_t>(options.kdf_concurrency, 1)),
      work_(options.threads, options.queue),
      login_work_(options.login_threads, options.login_queue) {}

void AdminApi::add_routes(Router& router) {
  using Pending = WhilePasswordChangePending;
  const auto add = [&](std::string_view method, std::string_view pattern,
                       Status (AdminApi::*handler)(Exchange&, const Principal&),
                       Pending pending = Pending::kRefused) {
    router.add(
        method, pattern, [this, handler, pending](const std::shared_ptr<Exchange>& exchange) {
          authenticated(exchange, [this, handler, pending](Exchange& e, const Principal& caller) {
            if (caller.password_change_required && !allowed_while_pending(pending, e, caller)) {
              return password_change_pending(caller.user.name);
            }
            return (this->*handler)(e, caller);
          });
        });
  };
  router.add("POST", "/v1/session", [this](const std::shared_ptr<Exchange>& e) { login(e); });
  // What the console's "Choose a new password" needs: who is signed in, the change, logging out.
  add("GET", "/v1/session", &AdminApi::whoami, Pending::kAllowed);
  add("DELETE", "/v1/session", &AdminApi::logout, Pending::kAllowed);

  add("GET", "/v1/algorithms", &AdminApi::list_algorithms);
  add("GET", "/v1/policies", &AdminApi::list_policies);
  add("POST", "/v1/policies", &AdminApi::create_policy);
  add("GET", "/v1/policies/{name}", &AdminApi::get_policy);
  add("PUT", "/v1/policies/{name}", &AdminApi::update_policy);
  add("DELETE", "/v1/policies/{name}", &AdminApi::delete_policy);
  add("GET", "/v1/policies/{name}/history", &AdminApi::policy_history);
  add("GET", "/v1/stats/decisions", &AdminApi::decision_stats);
  add("GET", "/v1/policies/{name}/rates", &AdminApi::policy_rates);
  add("GET", "/v1/policies/{name}/subjects/{key}", &AdminApi::peek_subject);
  add("DELETE", "/v1/policies/{name}/subjects/{key}", &AdminApi::reset_subject);
  add("POST", "/v1/policies/{name}/subjects/{key}/penalty/lift", &AdminApi::lift_subject_penalty);
  add("POST", "/v1/policies/{name}/subjects/{key}/leases/{lease}/release",
      &AdminApi::release_subject_lease);

  add("GET", "/v1/users", &AdminApi::list_users);
  add("POST", "/v1/users", &AdminApi::create_user);
  add("GET", "/v1/users/{name}", &AdminApi::get_user);
  add("DELETE", "/v1/users/{name}", &AdminApi::delete_user);
  add("PUT", "/v1/users/{name}/password", &AdminApi::set_password, Pending::kOwnUserOnly);
  add("PUT", "/v1/users/{name}/roles/{app}", &AdminApi::set_role);
  add("DELETE", "/v1/users/{name}/roles/{app}", &AdminApi::remove_role);

  add("GET", "/v1/apps", &AdminApi::list_apps);
  add("POST", "/v1/apps", &AdminApi::create_app);
  add("DELETE", "/v1/apps/{name}", &AdminApi::delete_app);

  add("GET", "/v1/tokens", &AdminApi::list_tokens);
  add("POST", "/v1/tokens", &AdminApi::create_token);
  add("DELETE", "/v1/tokens/{id}", &AdminApi::delete_token);
}

bool AdminApi::allowed_while_pending(WhilePasswordChangePending pending, const Exchange& exchange,
                                     const Principal& caller) {
  switch (pending) {
    case WhilePasswordChangePending::kAllowed:
      return true;
    case WhilePasswordChangePending::kOwnUserOnly:
      return exchange.param("name") == caller.user.name;
    case WhilePasswordChangePending::kRefused:
      return false;
  }
  return false;
}

Status password_change_pending(std::string_view user) {
  const std::string name(user);
  return {StatusCode::kPermissionDenied,
          "password change required: " + name +
              " signed in with a one-time password and must choose a new one first (PUT "
              "/v1/users/" +
              name +
              "/password); until then this session may only do that, read GET /v1/session and "
              "log out"};
}

Response kdf_busy() {
  return too_many_requests("password hashing is busy; try again shortly", kMicrosPerSecond);
}

void AdminApi::queue(WorkQueue& work, const std::shared_ptr<Exchange>& exchange,
                     std::function<void()> fn) {
  if (!work.post(std::move(fn))) {
    Response busy = problem_response(503, "the admin API is busy; try again shortly");
    busy.headers.push_back({"Retry-After", "1"});
    exchange->respond(std::move(busy));
  }
}

void AdminApi::authenticated(const std::shared_ptr<Exchange>& exchange, Call call) {
  queue(work_, exchange, [this, exchange, call = std::move(call)] {
    const auto run = [&]() -> Status {
      SLUICE_ASSIGN_OR_RETURN(const Principal caller, auth_.authenticate(exchange->request()));
      return call(*exchange, caller);
    };
    if (Status status = run(); !status.ok()) respond_error(*exchange, status);
  });
}

Status respond_with(Exchange& exchange, Response response) {
  exchange.respond(std::move(response));
  return {};
}

void respond_error(Exchange& exchange, const Status& status) {
  Response response = status_response(status);
  if (status.code() == StatusCode::kUnauthenticated) {
    response.headers.push_back({"WWW-Authenticate", "Bearer realm=\"sluice\""});
  }
  exchange.respond(std::move(response));
}

std::optional<json> read_object(Exchange& exchange,
                                std::initializer_list<std::string_view> allowed) {
  Response error;
  std::optional<json> body = parse_json_body(exchange.request().body, error);
  if (!body) {
    exchange.respond(std::move(error));
    return std::nullopt;
  }
  if (!body->is_object()) {
    exchange.respond(
        problem_response(400, "the body must be a JSON object",
                         {{"body", "must be an object, not " + std::string(json_type(*body))}}));
    return std::nullopt;
  }
  std::vector<FieldError> errors;
  reject_unknown(*body, allowed, errors);
  if (!errors.empty()) {
    exchange.respond(problem_response(400, "unknown fields in the body", errors));
    return std::nullopt;
  }
  return body;
}

namespace {

// Why a login request cannot be one a page on another site made the browser send (issue 32,
// L1: login CSRF, which signs the victim's browser in as the attacker): a cross-site form can
// only send text/plain, form-urlencoded or multipart bodies, and a cross-site fetch of JSON
// needs a preflight Sluice never grants. A browser that says the request is cross-site is
// refused too. nullopt: acceptable.
std::optional<Response> cross_site_login(const Request& request) {
  const std::string_view type = request.header("Content-Type").value_or("");
  const std::string_view media = type.substr(0, type.find(';'));
  std::string_view trimmed = media;
  while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
  if (!iequals(trimmed, "application/json")) {
    return problem_response(415, "a login must be sent as Content-Type: application/json",
                            {{"Content-Type", "must be application/json"}});
  }
  if (const auto site = request.header("Sec-Fetch-Site"); site && iequals(*site, "cross-site")) {
    return problem_response(403, "a login from another site is refused (Sec-Fetch-Site)");
  }
  return std::nullopt;
}

}  // namespace

void AdminApi::login(const std::shared_ptr<Exchange>& exchange) {
  if (std::optional<Response> refused = cross_site_login(exchange->request())) {
    return exchange->respond(std::move(*refused));
  }
  // On the I/O thread, before anything is queued: an address that floods logins gets 429 at the
  // cost of a map lookup.
  if (const std::optional<Micros> wait = auth_.take_login_from(exchange->request().peer())) {
    return exchange->respond(
        too_many_requests("too many logins from this address; try again later", *wait));
  }
  queue(login_work_, exchange, [this, exchange] {
    if (Status status = open_session(*exchange); !status.ok()) respond_error(*exchange, status);
  });
}

Status AdminApi::open_session(Exchange& exchange) {
  std::optional<json> body = read_object(exchange, {"user", "password"});
  if (!body) return already_answered();
  std::string user;
  std::string password;
  std::vector<FieldError> errors;
  read_string(*body, "user", user, false, errors);
  read_string(*body, "password", password, false, errors);
  if (errors.empty()) {
    if (Status valid = auth::validate_login_name(user, "user"); !valid.ok()) {
      errors.push_back({"user", valid.message().substr(std::string_view("user: ").size())});
    }
  }
  if (!errors.empty()) {
    return respond_with(exchange, problem_response(400, "invalid login request", errors));
  }
  const LoginResult login = auth_.login(user, password, exchange.request().peer());
  if (login.status.code() == StatusCode::kResourceExhausted) {
    return respond_with(exchange, too_many_requests(login.status.message(), login.retry_after));
  }
  SLUICE_RETURN_IF_ERROR(login.status);
  Response response =
      json_response(200, {{"user", auth::user_to_json(login.user)},
                          {"csrf_token", login.csrf_token},
                          {"expires_at", login.expires_at},
                          {"password_change_required", login.password_change_required}});
  response.headers.push_back({"Set-Cookie", auth_.session_cookie(login)});
  response.headers.push_back({"Cache-Control", "no-store"});
  return respond_with(exchange, std::move(response));
}

Status AdminApi::whoami(Exchange& exchange, const Principal& caller) {
  json body = {{"user", auth::user_to_json(caller.user)},
               {"via", caller.session.empty() ? "token" : "session"}};
  if (!caller.token.empty()) body["token"] = caller.token;
  if (!caller.session.empty()) body["csrf_token"] = caller.csrf_token;
  // The console asks a user signed in with a one-time password for a new one, also after a
  // reload of the page.
  StatusOr<std::string> stored = accounts_.password_hash(caller.user.name);
  body["password_change_required"] = stored.ok() && auth::is_one_time(*stored);
  return respond_with(exchange, json_response(200, body));
}

Status AdminApi::logout(Exchange& exchange, const Principal& caller) {
  if (!caller.session.empty()) auth_.logout(caller.session);
  Response response{.status = 204, .content_type = ""};
  response.headers.push_back({"Set-Cookie", auth_.expired_cookie()});
  return respond_with(exchange, std::move(response));
}

}  // namespace sluice::http
