// The decision endpoints of `sluice serve` (DESIGN.md §5a): POST /v1/acquire (with an optional
// wait), POST /v1/acquire/batch, POST /v1/leases/{lease}/release|renew, the gateway check
// GET /v1/check (nginx auth_request), and the operational GET /healthz, /readyz, /metrics and
// /openapi.json. A thin adapter over service::Limiter: it parses, hands each decision to the
// limiter, and answers from the limiter's callback; no I/O thread blocks and no thread pool
// decides. The calls that change state refuse what a browser may send from another site
// (refuse_cross_site), and /metrics is public, behind a token or off. Everything here is
// Beast-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/server/http/metrics.h"
#include "sluice/server/http/router.h"
#include "sluice/service/limiter.h"
#include "sluice/service/readiness.h"
#include "sluice/store/store.h"
#include "sluice/wire/rate_limit_headers.h"

namespace sluice::http {

// Who may read GET /metrics (issue 32: it was open to anyone who could reach the port, and names
// every policy with its traffic). docs/server.md#metrics.
enum class MetricsAccess : std::uint8_t {
  kPublic,  // anyone who reaches the port (Prometheus' default scrape)
  kToken,   // only with Authorization: Bearer <metrics_token>; else 401
  kOff,     // no /metrics route (404)
};
// "public", "token", "off"; InvalidArgument otherwise.
StatusOr<MetricsAccess> parse_metrics_access(std::string_view text);
std::string_view metrics_access_name(MetricsAccess access);

struct DecisionApiOptions {
  // Where GET /v1/check finds its inputs. Names are case-insensitive.
  std::string app_header = "X-Sluice-App";
  std::string policy_header = "X-Sluice-Policy";
  std::string key_header = "X-Sluice-Key";
  std::string cost_header = "X-Sluice-Cost";  // optional; default 1
  // Status of a denied check (a `deny_status` query parameter overrides it per request).
  // nginx's auth_request passes only 401 and 403 on; anything else becomes a 500 there.
  int check_deny_status = 429;
  wire::HeaderSets header_sets;
  // Upper bound of `wait_ms` in POST /v1/acquire.
  Micros max_wait = 60 * kMicrosPerSecond;
  // Upper bound of the number of requests in one POST /v1/acquire/batch.
  std::size_t max_batch = 1'000;
  // Wall clock for X-RateLimit-Reset (Unix seconds). Null: the system clock.
  const Clock* clock = nullptr;
  // GET /readyz also asks this (when set) whether the policy database answers.
  std::function<Status()> policies_ready;
  // GET /metrics appends what this writes (when set): the stores' own metrics.
  std::function<void(std::string&)> store_metrics;
  MetricsAccess metrics_access = MetricsAccess::kPublic;
  std::string metrics_token;  // kToken: the bearer token /metrics asks for (not empty)
  // The decision calls that change state (acquire, batch, lease release/renew, charge, refund,
  // reserve, settle) refuse what a browser could send from another site without asking (issue 32
  // L2): a Content-Type other than application/json (415) and Sec-Fetch-Site: cross-site (403).
  // True accepts both (a browser page on another site meant to call Sluice directly).
  bool allow_cross_site = false;
};

// Issue 32 L2: the answer refusing `request` as a state-changing call a browser may have sent
// from another site, or nullopt. A page on any site may POST a "simple" request — Content-Type
// text/plain, application/x-www-form-urlencoded, multipart/form-data, or none — without a CORS
// preflight, carrying the victim's network position (a tenant charged into debt from a victim's
// browser); application/json needs a preflight, which Sluice never grants. So: 415 unless the
// media type is application/json (or a +json type), 403 when Sec-Fetch-Site is cross-site.
std::optional<Response> refuse_cross_site(const Request& request);

// One acquire request as read from JSON.
struct AcquireInput {
  std::string app;
  std::string policy;
  std::string key;
  std::int64_t cost = 1;
  std::int64_t wait_ms = 0;
};

struct ParsedAcquire {
  std::optional<AcquireInput> input;  // set exactly when errors is empty
  std::vector<FieldError> errors;
};

// Reads {"app", "policy", "key", "cost"?, "wait_ms"?}: every problem at once, each naming its
// field — not an object, missing or non-string app/policy/key, empty app/policy, key over
// 1 024 bytes, non-integer or out-of-range cost (0..1e9) and wait_ms (0..max_wait_ms; only 0
// when `max_wait_ms` is 0), and unknown fields.
ParsedAcquire parse_acquire(const nlohmann::json& body, std::int64_t max_wait_ms);

// Reads a JSON body: nullopt and `error` set (a 400 problem) when it is not JSON, nests deeper
// than 64 levels or is not valid UTF-8.
std::optional<nlohmann::json> parse_json_body(std::string_view body, Response& error);

// The embedded docs/openapi.json.
std::string_view openapi_document();

class DecisionApi {
 public:
  // Every reference must outlive the DecisionApi, which must outlive the routes it adds.
  // `store` is the one the limiter decides on (GET /readyz peeks it). Decisions carry the policy
  // that made them (Decided::policy), so the API needs no policy lookup of its own.
  DecisionApi(service::Limiter& limiter, store::Store& store, Metrics& metrics,
              DecisionApiOptions options = {});

  void add_routes(Router& router);

 private:
  // The limiter's request; `from` names the client (its peer address) for the pending shares.
  static service::DecisionRequest to_request(AcquireInput input, const Request& from);
  // The decision's answer, with the rate-limit headers of `policy`, the snapshot that decided
  // (Decided::policy; null: no headers).
  Response decision_response(const service::Decision& decision, const policy::Policy* policy) const;
  // GET /v1/check's answer: the decision's, or `deny_status` with a problem when denied.
  Response check_response(const service::Decision& decision, const policy::Policy* policy,
                          std::int64_t cost, int deny_status) const;

  void acquire(const std::shared_ptr<Exchange>& exchange);
  void acquire_batch(const std::shared_ptr<Exchange>& exchange);
  // POST /v1/leases/{lease}/release (kRelease) and /renew (kRenew).
  void lease(const std::shared_ptr<Exchange>& exchange, service::Operation operation);
  // POST /v1/charge and /v1/refund (docs/quotas.md): {"app", "policy", "key", "cost"} → 200 and
  // the decision with its "balance" (a charge refused for max_debt is allowed: false).
  void quota(const std::shared_ptr<Exchange>& exchange, service::Operation operation);
  void check(const std::shared_ptr<Exchange>& exchange);
  void readyz(const std::shared_ptr<Exchange>& exchange);
  void metrics(const std::shared_ptr<Exchange>& exchange);

  // Answers `exchange` and returns true when refuse_cross_site refuses it (unless allowed).
  bool refused_cross_site(const std::shared_ptr<Exchange>& exchange) const;

  service::Limiter& limiter_;
  const service::Readiness readiness_;  // GET /readyz: the store, then policies_ready
  Metrics& metrics_;
  DecisionApiOptions options_;
  const Clock& clock_;
  std::string metrics_token_hash_;  // SHA-256 hex of options_.metrics_token
};

}  // namespace sluice::http
