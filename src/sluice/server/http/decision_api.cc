#include "sluice/server/http/decision_api.h"

#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "sluice/algorithm/validate.h"
#include "sluice/auth/secrets.h"
#include "sluice/core/key.h"
#include "sluice/server/http/json_fields.h"
#include "sluice/wire/decision_json.h"

namespace sluice::http {
namespace {

using nlohmann::json;

// A draw in [0, 1) for Retry-After jitter: per thread, so no lock; not a secret.
double uniform_draw() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

constexpr int kMaxJsonDepth = 64;
// The longest lease or reservation id a request may name; a longer one is refused before the
// store is asked.
constexpr std::size_t kMaxIdBytes = 128;
// How long a reservation holds its units when the request names no ttl_ms.
constexpr std::int64_t kDefaultReservationTtlMs = 60'000;
constexpr std::string_view kQuotaExceededType =
    "https://iana.org/assignments/http-problem-types#quota-exceeded";
constexpr std::string_view kQuotaExceededTitle =
    "Request cannot be satisfied as assigned quota has been exceeded";

// Whether the answer to an overloaded server (max_pending decisions in flight) advises
// Retry-After: acquire and check do, so clients back off instead of queueing without bound;
// leases and quota operations answer the plain problem, as they always have.
enum class OverloadRetry { kAdvised, kNotAdvised };

// A decision request that could not be decided: the status's problem, and 503 with Retry-After
// when the server is overloaded and `retry` advises it.
Response decision_error(const Status& status, OverloadRetry retry = OverloadRetry::kAdvised) {
  Response response = status_response(status);
  if (retry == OverloadRetry::kAdvised && service::is_overloaded(status)) {
    response.headers.push_back({"Retry-After", "1"});
  }
  return response;
}

// The limiter's callback of one decision endpoint, the one place where the decision API turns
// the limiter's error into a response: `respond(decided)` makes the response of a decision.
template <typename Respond>
service::Limiter::Done answer_decided(std::shared_ptr<Exchange> exchange, OverloadRetry retry,
                                      Respond respond) {
  return [exchange = std::move(exchange), retry,
          respond = std::move(respond)](service::Decided decided) {
    if (decided.decision.ok()) return exchange->respond(respond(decided));
    exchange->respond(decision_error(decided.decision.status(), retry));
  };
}

Response invalid_request(std::string_view detail, const std::vector<FieldError>& errors) {
  return problem_response(400, detail, errors);
}

// application/json, or an application/...+json structured-syntax type (RFC 6839).
bool is_json_media_type(std::string_view type) {
  constexpr std::string_view kApplication = "application/";
  constexpr std::string_view kSuffix = "+json";
  if (iequals(type, kJson)) return true;
  return type.size() > kApplication.size() + kSuffix.size() &&
         iequals(type.substr(0, kApplication.size()), kApplication) &&
         iequals(type.substr(type.size() - kSuffix.size()), kSuffix);
}

}  // namespace

StatusOr<MetricsAccess> parse_metrics_access(std::string_view text) {
  if (text == "public") return MetricsAccess::kPublic;
  if (text == "token") return MetricsAccess::kToken;
  if (text == "off") return MetricsAccess::kOff;
  return invalid_argument("must be public, token or off, not \"" + std::string(text) + "\"");
}

std::string_view metrics_access_name(MetricsAccess access) {
  switch (access) {
    case MetricsAccess::kPublic:
      return "public";
    case MetricsAccess::kToken:
      return "token";
    case MetricsAccess::kOff:
      return "off";
  }
  return "public";
}

std::optional<Response> refuse_cross_site(const Request& request) {
  if (const std::optional<std::string_view> site = request.header("Sec-Fetch-Site");
      site && iequals(*site, "cross-site")) {
    return problem_response(403,
                            "decision calls from pages on other sites are refused "
                            "(Sec-Fetch-Site: cross-site); see allow_cross_site_decisions");
  }
  std::string_view type = request.header("Content-Type").value_or("");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  if (is_json_media_type(type)) return std::nullopt;
  return problem_response(
      415,
      "Content-Type must be application/json, not " +
          (type.empty() ? std::string("none") : "\"" + std::string(type) + "\"") +
          " (curl: --json or -H 'Content-Type: application/json')",
      {{"Content-Type", "must be application/json"}});
}

ParsedAcquire parse_acquire(const json& body, std::int64_t max_wait_ms) {
  ParsedAcquire parsed;
  if (!body.is_object()) {
    parsed.errors.push_back({"body", "must be a JSON object, not " + std::string(json_type(body))});
    return parsed;
  }
  AcquireInput input;
  read_string(body, "app", input.app, false, parsed.errors);
  read_string(body, "policy", input.policy, false, parsed.errors);
  read_string(body, "key", input.key, true, parsed.errors);
  if (input.key.size() > kMaxSubjectBytes) {
    parsed.errors.push_back(
        {"key", "must be at most " + std::to_string(kMaxSubjectBytes) + " bytes"});
  }
  read_integer(body, "cost", 0, algorithm::kMaxCost, input.cost, parsed.errors);
  if (max_wait_ms > 0) {
    read_integer(body, "wait_ms", 0, max_wait_ms, input.wait_ms, parsed.errors);
  } else if (const auto it = body.find("wait_ms"); it != body.end()) {
    read_integer(body, "wait_ms", 0, 0, input.wait_ms, parsed.errors);
    if (!parsed.errors.empty() && parsed.errors.back().field == "wait_ms") {
      parsed.errors.back().message = "waiting is not supported here; must be 0";
    }
  }
  reject_unknown(body, {"app", "policy", "key", "cost", "wait_ms"}, parsed.errors);
  if (parsed.errors.empty()) parsed.input = std::move(input);
  return parsed;
}

std::optional<json> parse_json_body(std::string_view body, Response& error) {
  // The parser itself is iterative, but deep documents cost recursion elsewhere: refuse them.
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        error = invalid_request(
            "malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
            {{"body", "nested too deeply"}});
        return std::nullopt;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    error = invalid_request(std::string("malformed JSON: ") + e.what(),
                            {{"body", "is not valid JSON"}});
    return std::nullopt;
  }
}

DecisionApi::DecisionApi(service::Limiter& limiter, store::Store& store, Metrics& metrics,
                         DecisionApiOptions options)
    : limiter_(limiter),
      readiness_(store, options.policies_ready),
      metrics_(metrics),
      options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : SystemClock::instance()),
      metrics_token_hash_(options_.metrics_token.empty()
                              ? std::string()
                              : auth::sha256_hex(options_.metrics_token)) {}

bool DecisionApi::refused_cross_site(const std::shared_ptr<Exchange>& exchange) const {
  if (options_.allow_cross_site) return false;
  std::optional<Response> refusal = refuse_cross_site(exchange->request());
  if (!refusal) return false;
  exchange->respond(*std::move(refusal));
  return true;
}

void DecisionApi::add_routes(Router& router) {
  router.add("POST", "/v1/acquire", [this](auto exchange) { acquire(std::move(exchange)); });
  router.add("POST", "/v1/acquire/batch",
             [this](auto exchange) { acquire_batch(std::move(exchange)); });
  router.add("POST", "/v1/leases/{lease}/release",
             [this](auto exchange) { lease(std::move(exchange), service::Operation::kRelease); });
  router.add("POST", "/v1/leases/{lease}/renew",
             [this](auto exchange) { lease(std::move(exchange), service::Operation::kRenew); });
  router.add("POST", "/v1/charge",
             [this](auto exchange) { quota(std::move(exchange), service::Operation::kCharge); });
  router.add("POST", "/v1/refund",
             [this](auto exchange) { quota(std::move(exchange), service::Operation::kRefund); });
  router.add("POST", "/v1/reserve",
             [this](auto exchange) { quota(std::move(exchange), service::Operation::kReserve); });
  router.add("POST", "/v1/settle",
             [this](auto exchange) { quota(std::move(exchange), service::Operation::kSettle); });
  router.add("GET", "/v1/check", [this](auto exchange) { check(std::move(exchange)); });
  router.add("GET", "/healthz", [](auto exchange) {
    exchange->respond(json_response(200, {{"status", "ok"}}));
  });
  router.add("GET", "/readyz", [this](auto exchange) { readyz(std::move(exchange)); });
  if (options_.metrics_access != MetricsAccess::kOff) {
    router.add("GET", "/metrics", [this](auto exchange) { metrics(std::move(exchange)); });
  }
  router.add("GET", "/openapi.json", [](auto exchange) {
    exchange->respond({.status = 200,
                       .content_type = "application/json",
                       .body = std::string(openapi_document())});
  });
}

service::DecisionRequest DecisionApi::to_request(AcquireInput input, const Request& from) {
  return {.app = std::move(input.app),
          .policy = std::move(input.policy),
          .subject = std::move(input.key),
          .cost = input.cost,
          .wait = input.wait_ms * kMicrosPerMilli,
          .client = std::string(from.peer())};
}

Response DecisionApi::decision_response(const service::Decision& decision,
                                        const policy::Policy* policy) const {
  Response response{.status = 200, .body = wire::decision_json(decision)};
  if (policy != nullptr) {
    response.headers =
        wire::rate_limit_headers(decision, policy->limits, clock_.now(), options_.header_sets);
  }
  return response;
}

void DecisionApi::acquire(const std::shared_ptr<Exchange>& exchange) {
  if (refused_cross_site(exchange)) return;
  Response error;
  std::optional<json> body = parse_json_body(exchange->request().body, error);
  if (!body) return exchange->respond(std::move(error));
  ParsedAcquire parsed = parse_acquire(*body, options_.max_wait / kMicrosPerMilli);
  if (!parsed.input) {
    return exchange->respond(invalid_request("invalid acquire request", parsed.errors));
  }
  exchange->discard_body();  // a wait may hold the exchange for up to max_wait
  limiter_.decide(
      to_request(std::move(*parsed.input), exchange->request()),
      answer_decided(exchange, OverloadRetry::kAdvised, [this](const service::Decided& decided) {
        return decision_response(*decided.decision, decided.policy.get());
      }));
}

void DecisionApi::acquire_batch(const std::shared_ptr<Exchange>& exchange) {
  if (refused_cross_site(exchange)) return;
  Response error;
  std::optional<json> body = parse_json_body(exchange->request().body, error);
  if (!body) return exchange->respond(std::move(error));
  std::vector<FieldError> errors;
  if (!body->is_object()) {
    errors.push_back({"body", "must be a JSON object, not " + std::string(json_type(*body))});
  } else {
    reject_unknown(*body, {"requests"}, errors);
    const auto it = body->find("requests");
    if (it == body->end()) {
      errors.push_back({"requests", "is required"});
    } else if (!it->is_array()) {
      errors.push_back({"requests", "must be an array, not " + std::string(json_type(*it))});
    } else if (it->size() > options_.max_batch) {
      errors.push_back({"requests", "must hold at most " + std::to_string(options_.max_batch) +
                                        " requests, not " + std::to_string(it->size())});
    }
  }
  if (!errors.empty()) return exchange->respond(invalid_request("invalid batch request", errors));
  exchange->discard_body();  // parsed into `body`: the text and its budget go now
  // Every decision is submitted before any is answered, so those bound for the same store share
  // its calls; answers come back in request order.
  const json& items = (*body)["requests"];
  std::vector<service::DecisionRequest> requests;
  std::vector<std::optional<json>> refused(items.size());  // a problem per invalid request
  std::vector<std::size_t> positions;                      // of each submitted request
  for (std::size_t i = 0; i < items.size(); ++i) {
    ParsedAcquire parsed = parse_acquire(items[i], 0);
    if (!parsed.input) {
      refused[i] = wire::problem_json(
          400, "invalid acquire request at requests[" + std::to_string(i) + "]", parsed.errors);
      continue;
    }
    requests.push_back(to_request(std::move(*parsed.input), exchange->request()));
    positions.push_back(i);
  }
  limiter_.decide_all(std::move(requests), [exchange, refused = std::move(refused),
                                            positions = std::move(positions)](
                                               std::vector<service::Decided> answers) mutable {
    // A batch is admitted whole or refused whole (Limiter::decide_all).
    if (!answers.empty() && !answers.front().decision.ok() &&
        service::is_overloaded(answers.front().decision.status())) {
      return exchange->respond(decision_error(answers.front().decision.status()));
    }
    std::vector<std::string> texts(refused.size());
    for (std::size_t i = 0; i < refused.size(); ++i) {
      if (refused[i]) texts[i] = dump_json(*refused[i]);
    }
    for (std::size_t j = 0; j < answers.size(); ++j) {
      const StatusOr<service::Decision>& answer = answers[j].decision;
      texts[positions[j]] =
          answer.ok() ? wire::decision_json(*answer)
                      : dump_json(wire::problem_json(http_status_for(answer.status().code()),
                                                     answer.status().message()));
    }
    std::string out = "{\"decisions\":[";
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += texts[i];
    }
    out += "]}";
    exchange->respond({.status = 200, .body = std::move(out)});
  });
}

void DecisionApi::lease(const std::shared_ptr<Exchange>& exchange, service::Operation operation) {
  const bool release = operation == service::Operation::kRelease;
  if (refused_cross_site(exchange)) return;
  Response error;
  std::optional<json> body = parse_json_body(exchange->request().body, error);
  if (!body) return exchange->respond(std::move(error));
  std::vector<FieldError> errors;
  AcquireInput input;
  if (!body->is_object()) {
    errors.push_back({"body", "must be a JSON object, not " + std::string(json_type(*body))});
  } else {
    read_string(*body, "app", input.app, false, errors);
    read_string(*body, "policy", input.policy, false, errors);
    read_string(*body, "key", input.key, true, errors);
    reject_unknown(*body, {"app", "policy", "key"}, errors);
  }
  std::string lease(exchange->param("lease"));
  if (lease.size() > kMaxIdBytes) {
    errors.push_back({"lease", "must be at most " + std::to_string(kMaxIdBytes) + " bytes"});
  }
  if (!errors.empty()) {
    return exchange->respond(
        invalid_request(release ? "invalid release request" : "invalid renew request", errors));
  }
  const char* answer_field = release ? "released" : "renewed";
  // The decision allows when the lease was live (and is now released or renewed).
  limiter_.decide(
      {.app = std::move(input.app),
       .policy = std::move(input.policy),
       .operation = operation,
       .subject = std::move(input.key),
       .lease = std::move(lease)},
      answer_decided(
          exchange, OverloadRetry::kNotAdvised, [answer_field](const service::Decided& decided) {
            return json_response(200, {{answer_field, decided.decision->verdict.allowed}});
          }));
}

void DecisionApi::quota(const std::shared_ptr<Exchange>& exchange, service::Operation operation) {
  const std::string_view name = service::operation_name(operation);
  if (refused_cross_site(exchange)) return;
  Response error;
  std::optional<json> body = parse_json_body(exchange->request().body, error);
  if (!body) return exchange->respond(std::move(error));
  std::vector<FieldError> errors;
  AcquireInput input;
  std::int64_t ttl_ms = kDefaultReservationTtlMs;  // reserve
  std::string reservation;                         // settle
  if (!body->is_object()) {
    errors.push_back({"body", "must be a JSON object, not " + std::string(json_type(*body))});
  } else {
    read_string(*body, "app", input.app, false, errors);
    read_string(*body, "policy", input.policy, false, errors);
    read_string(*body, "key", input.key, true, errors);
    if (input.key.size() > kMaxSubjectBytes) {
      errors.push_back({"key", "must be at most " + std::to_string(kMaxSubjectBytes) + " bytes"});
    }
    if (!body->contains("cost")) errors.push_back({"cost", "is required"});
    read_integer(*body, "cost", 0, algorithm::kMaxCost, input.cost, errors);
    if (operation == service::Operation::kReserve) {
      read_integer(*body, "ttl_ms", 1, store::kMaxReservationTtl / kMicrosPerMilli, ttl_ms, errors);
      reject_unknown(*body, {"app", "policy", "key", "cost", "ttl_ms"}, errors);
    } else if (operation == service::Operation::kSettle) {
      read_string(*body, "reservation", reservation, true, errors);
      if (reservation.empty() || reservation.size() > kMaxIdBytes) {
        errors.push_back({"reservation", "must be the id reserve answered (1 to " +
                                             std::to_string(kMaxIdBytes) + " bytes)"});
      }
      reject_unknown(*body, {"app", "policy", "key", "cost", "reservation"}, errors);
    } else {
      reject_unknown(*body, {"app", "policy", "key", "cost"}, errors);
    }
  }
  if (!errors.empty()) {
    return exchange->respond(invalid_request("invalid " + std::string(name) + " request", errors));
  }
  limiter_.decide(
      {.app = std::move(input.app),
       .policy = std::move(input.policy),
       .operation = operation,
       .subject = std::move(input.key),
       .cost = input.cost,
       .client = std::string(exchange->request().peer()),
       .reservation = std::move(reservation),
       .reservation_ttl = ttl_ms * kMicrosPerMilli},
      answer_decided(exchange, OverloadRetry::kNotAdvised, [this](const service::Decided& decided) {
        return decision_response(*decided.decision, decided.policy.get());
      }));
}

void DecisionApi::check(const std::shared_ptr<Exchange>& exchange) {
  const Request& request = exchange->request();
  std::vector<FieldError> errors;
  AcquireInput input;
  const auto required = [&](const std::string& name, std::string& out, bool allow_empty) {
    const std::optional<std::string_view> value = request.header(name);
    if (!value) {
      errors.push_back({name, "header is required"});
    } else if (value->empty() && !allow_empty) {
      errors.push_back({name, "header must not be empty"});
    } else {
      out = std::string(*value);
    }
  };
  required(options_.app_header, input.app, false);
  required(options_.policy_header, input.policy, false);
  required(options_.key_header, input.key, true);
  if (input.key.size() > kMaxSubjectBytes) {
    errors.push_back(
        {options_.key_header, "must be at most " + std::to_string(kMaxSubjectBytes) + " bytes"});
  }
  if (const auto cost = request.header(options_.cost_header)) {
    std::int64_t value = -1;
    const auto [end, ec] = std::from_chars(cost->data(), cost->data() + cost->size(), value);
    if (ec != std::errc() || end != cost->data() + cost->size() || value < 0 ||
        value > algorithm::kMaxCost) {
      errors.push_back({options_.cost_header,
                        "must be an integer between 0 and " + std::to_string(algorithm::kMaxCost)});
    } else {
      input.cost = value;
    }
  }
  int deny_status = options_.check_deny_status;
  if (const auto param = request.query_param("deny_status")) {
    int value = 0;
    const auto [end, ec] = std::from_chars(param->data(), param->data() + param->size(), value);
    if (ec != std::errc() || end != param->data() + param->size() || value < 400 || value > 499) {
      errors.push_back({"deny_status", "must be a 4xx status code"});
    } else {
      deny_status = value;
    }
  }
  if (!errors.empty()) return exchange->respond(invalid_request("invalid check request", errors));
  const std::int64_t cost = input.cost;
  limiter_.decide(to_request(std::move(input), request),
                  answer_decided(exchange, OverloadRetry::kAdvised,
                                 [this, cost, deny_status](const service::Decided& decided) {
                                   return check_response(*decided.decision, decided.policy.get(),
                                                         cost, deny_status);
                                 }));
}

Response DecisionApi::check_response(const service::Decision& decision,
                                     const policy::Policy* policy, std::int64_t cost,
                                     int deny_status) const {
  Response response = decision_response(decision, policy);
  if (decision.verdict.allowed) return response;
  const std::string item = wire::policy_item_name(decision.policy, decision.limit_index);
  const std::optional<std::int64_t> retry = wire::retry_after_seconds(decision);
  // The header may be spread by the policy's retry_jitter; the body keeps the exact time.
  const std::int64_t jitter = policy ? policy->retry_jitter_percent : 0;
  const std::optional<std::int64_t> retry_header =
      wire::jittered_retry_after_seconds(decision, jitter, jitter > 0 ? uniform_draw() : 0.0);
  json problem = wire::problem_json(
      deny_status,
      retry
          ? "policy \"" + decision.policy + "\" allows this request again in " +
                std::to_string(*retry) + " s"
          : "policy \"" + decision.policy + "\" can never grant a cost of " + std::to_string(cost),
      {}, kQuotaExceededTitle, kQuotaExceededType);
  problem["violated-policies"] = json::array({item});
  response.status = deny_status;
  response.content_type = std::string(wire::kProblemJson);
  response.body = dump_json(problem);
  if (retry_header) response.headers.push_back({"Retry-After", std::to_string(*retry_header)});
  return response;
}

void DecisionApi::readyz(const std::shared_ptr<Exchange>& exchange) {
  // The store's part is answered wherever the store answers (no thread waits for it).
  readiness_.check_store([this, exchange](const Status& store, Micros elapsed) {
    if (!store.ok()) {
      return exchange->respond(
          problem_response(503, "store unreachable: " + store.to_string(), {}, "Not Ready"));
    }
    if (!readiness_.has_policies()) {
      return exchange->respond(
          json_response(200, {{"status", "ready"}, {"store_latency_us", elapsed}}));
    }
    // The policy database is asked with a blocking call: on the admin pool's side of the
    // server, never on an I/O thread or the store's.
    exchange->offload([this, exchange, elapsed] {
      if (Status policies = readiness_.check_policies(); !policies.ok()) {
        return exchange->respond(problem_response(
            503, "policy database unreachable: " + policies.to_string(), {}, "Not Ready"));
      }
      exchange->respond(json_response(200, {{"status", "ready"}, {"store_latency_us", elapsed}}));
    });
  });
}

void DecisionApi::metrics(const std::shared_ptr<Exchange>& exchange) {
  if (options_.metrics_access == MetricsAccess::kToken) {
    constexpr std::string_view kBearer = "Bearer ";
    const std::string_view presented = exchange->request().header("Authorization").value_or("");
    // Hashes compared, not tokens: equal lengths, so the time says nothing about the token.
    const bool granted =
        !metrics_token_hash_.empty() && presented.size() > kBearer.size() &&
        iequals(presented.substr(0, kBearer.size()), kBearer) &&
        auth::constant_time_equals(auth::sha256_hex(presented.substr(kBearer.size())),
                                   metrics_token_hash_);
    if (!granted) {
      Response refusal = problem_response(
          401, "GET /metrics needs Authorization: Bearer <metrics_token> (metrics: token)");
      refusal.headers.push_back({"WWW-Authenticate", "Bearer realm=\"sluice-metrics\""});
      return exchange->respond(std::move(refusal));
    }
  }
  std::string body = metrics_.render(&limiter_.metrics());
  if (options_.store_metrics) options_.store_metrics(body);
  exchange->respond({.status = 200,
                     .content_type = "text/plain; version=0.0.4; charset=utf-8",
                     .body = std::move(body)});
}

}  // namespace sluice::http
