// The admin API of `sluice serve` (DESIGN.md §5a, docs/admin-api.md): login sessions, policies
// (CRUD and history), users and their per-app roles, apps and API tokens — each call
// authenticated by AdminAuth and authorized by the pure rules of auth/authorize.h, so the HTTP
// API, the CLI's --as and the web UI allow exactly the same things. A refused call changes
// nothing. Handlers run on a WorkQueue of their own (SQL round trips, argon2), never on the I/O
// threads or the store pool. Implemented in admin_api.cc (session and shared parts),
// policy_api.cc, subject_api.cc, account_api.cc and algorithm_api.cc.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/auth/authorize.h"
#include "sluice/auth/kdf_gate.h"
#include "sluice/auth/passwords.h"
#include "sluice/core/clock.h"
#include "sluice/core/work_queue.h"
#include "sluice/policy/repository.h"
#include "sluice/server/http/admin_auth.h"
#include "sluice/server/http/router.h"
#include "sluice/service/decision_history.h"
#include "sluice/service/decision_metrics.h"
#include "sluice/store/store.h"

namespace sluice::http {

struct AdminApiOptions {
  int threads = 2;          // argon2 takes 64 MiB per hash: this bounds the memory logins use
  std::size_t queue = 256;  // admin requests waiting beyond it get 503
  // Logins (POST /v1/session) wait apart, so unauthenticated callers cannot starve the
  // authenticated ones; beyond this queue they get 503.
  int login_threads = 1;
  std::size_t login_queue = 32;
  auth::PasswordHashOptions password_hash;  // for passwords set through the API
  // Password hashes (and verifications) running at once on the admin threads; a call that finds
  // them all busy gets 429 with Retry-After instead of waiting on an admin thread, so calls that
  // hash nothing always find a free thread (issue 32, M7). Keep it below `threads`.
  std::size_t kdf_concurrency = 1;
  // API tokens (issue 32, M9): a description longer than this is refused (400 naming
  // "description"); a user holding max_tokens_per_user tokens gets 429 until one is revoked
  // (0: no cap).
  std::size_t max_token_description_bytes = 1024;
  std::size_t max_tokens_per_user = 100;
  // GET /v1/users and GET /v1/tokens answer pages: ?limit= (default default_page_size, at most
  // max_page_size) and ?cursor= (the previous page's next_cursor).
  std::size_t default_page_size = 100;
  std::size_t max_page_size = 1000;
  // The decision counters GET /v1/stats/decisions reports (the server's Limiter's); null: none.
  const service::DecisionMetrics* decisions = nullptr;
  // Their per-second history GET /v1/policies/{name}/rates serves; null: none.
  const service::DecisionHistory* history = nullptr;
  // Called with (policy, subject) after an owner reset a subject or lifted its penalty box, so
  // the server's Limiter forgets a denial it cached for it (docs/defences.md); null: nothing.
  std::function<void(std::string_view policy, std::string_view subject)> subject_cleared;
};

class AdminApi {
 public:
  // `store` holds the decisions' state (peeked and reset through the subject endpoints).
  // `policies_changed` runs after every committed policy change (the server refreshes its
  // PolicyCache so its own decisions see the change at once). Every reference must outlive the
  // AdminApi, which must outlive the server serving its routes.
  AdminApi(policy::PolicyRepository& policies, auth::AccountRepository& accounts,
           store::Store& store, AdminAuth& auth, const Clock& clock,
           std::function<void()> policies_changed, AdminApiOptions options = {});

  void add_routes(Router& router);

  // The gate the admin threads' password hashes pass (counters for tests and metrics).
  const auth::KdfGate& kdf_gate() const { return kdf_gate_; }

 private:
  // The policy the route names, as stored, when `caller` may do `operation` on it (its apps as
  // both before and after: nothing about them changes); else NotFound, PermissionDenied or the
  // repository's error.
  StatusOr<policy::Policy> stored_policy(const Exchange& exchange, const Principal& caller,
                                         auth::Operation operation);
  // What a session opened with a one-time password may call before choosing a new password.
  enum class WhilePasswordChangePending { kRefused, kAllowed, kOwnUserOnly };
  // Every handler below returns OK once it has answered the exchange (a helper may have answered
  // a 400 naming fields: already_answered()), or the error it leaves unanswered, which the
  // route answers as problem+json (respond_error): the one place the admin API turns an error
  // into a response.
  using Call = std::function<Status(Exchange& exchange, const Principal& caller)>;
  // Whether a route marked `pending` serves a caller whose password change is pending.
  static bool allowed_while_pending(WhilePasswordChangePending pending, const Exchange& exchange,
                                    const Principal& caller);
  // Runs `call` on the work queue for an authenticated caller; answers 401/403/503 and the
  // errors `call` returns.
  void authenticated(const std::shared_ptr<Exchange>& exchange, Call call);
  // ?limit= and ?cursor= of a listing; nullopt after answering 400 naming the field.
  std::optional<std::pair<std::size_t, std::string>> read_page(Exchange& exchange) const;
  // Runs `fn` on `work`, or answers 503 when it is full.
  static void queue(WorkQueue& work, const std::shared_ptr<Exchange>& exchange,
                    std::function<void()> fn);

  // Session (admin_api.cc).
  void login(const std::shared_ptr<Exchange>& exchange);
  // POST /v1/session's work on the login queue (a Call without a caller).
  Status open_session(Exchange& exchange);
  Status whoami(Exchange& exchange, const Principal& caller);
  Status logout(Exchange& exchange, const Principal& caller);

  // Policies (policy_api.cc).
  Status list_policies(Exchange& exchange, const Principal& caller);
  // GET /v1/algorithms (algorithm_api.h): the same for every signed-in caller.
  Status list_algorithms(Exchange& exchange, const Principal& caller);
  Status create_policy(Exchange& exchange, const Principal& caller);
  Status get_policy(Exchange& exchange, const Principal& caller);
  Status update_policy(Exchange& exchange, const Principal& caller);
  Status delete_policy(Exchange& exchange, const Principal& caller);
  Status policy_history(Exchange& exchange, const Principal& caller);
  // Why a caller who is not an admin may not save `wanted` (nullopt: it may): its descriptor
  // path overlaps that of a policy for any app ("*"). Errors: the repository's.
  StatusOr<std::optional<FieldError>> overlapping_descriptor_path(const Principal& caller,
                                                                  const policy::Policy& wanted);
  // Cumulative decision counts of the policies the caller may read (the console's live rates).
  Status decision_stats(Exchange& exchange, const Principal& caller);
  // One policy's per-second decision counts over the last minutes (the console's live chart).
  Status policy_rates(Exchange& exchange, const Principal& caller);

  // One subject's state under a policy (subject_api.cc): readers peek (with a dry run and the
  // leases), owners reset it or release one of its leases.
  Status peek_subject(Exchange& exchange, const Principal& caller);
  Status reset_subject(Exchange& exchange, const Principal& caller);
  Status release_subject_lease(Exchange& exchange, const Principal& caller);
  // Owners lift the subject's penalty box (the block, its strikes and escalation).
  Status lift_subject_penalty(Exchange& exchange, const Principal& caller);

  // Users, apps, tokens (account_api.cc).
  Status list_users(Exchange& exchange, const Principal& caller);
  Status create_user(Exchange& exchange, const Principal& caller);
  Status get_user(Exchange& exchange, const Principal& caller);
  Status delete_user(Exchange& exchange, const Principal& caller);
  Status set_password(Exchange& exchange, const Principal& caller);
  Status set_role(Exchange& exchange, const Principal& caller);
  Status remove_role(Exchange& exchange, const Principal& caller);
  Status list_apps(Exchange& exchange, const Principal& caller);
  Status create_app(Exchange& exchange, const Principal& caller);
  Status delete_app(Exchange& exchange, const Principal& caller);
  Status list_tokens(Exchange& exchange, const Principal& caller);
  Status create_token(Exchange& exchange, const Principal& caller);
  Status delete_token(Exchange& exchange, const Principal& caller);

  policy::PolicyRepository& policies_;
  auth::AccountRepository& accounts_;
  store::Store& store_;
  AdminAuth& auth_;
  const Clock& clock_;
  std::function<void()> policies_changed_;
  const auth::PasswordHashOptions password_hash_;
  const service::DecisionMetrics* decisions_;
  std::function<void(std::string_view, std::string_view)> subject_cleared_;
  const service::DecisionHistory* history_;
  const std::size_t max_token_description_bytes_;
  const std::size_t max_tokens_per_user_;
  const std::size_t default_page_size_;
  const std::size_t max_page_size_;
  auth::KdfGate kdf_gate_;
  WorkQueue work_;
  WorkQueue login_work_;
};

// Helpers shared by the admin handlers.

// The request body as a JSON object whose fields are all in `allowed`; nullopt after answering
// 400 (not JSON, not an object, or naming each unknown field).
std::optional<nlohmann::json> read_object(Exchange& exchange,
                                          std::initializer_list<std::string_view> allowed);

// auth::authorize_policy on the stored policy `name`, except that a caller who may not even read
// it is told it does not exist (404 in the repository's words for a missing policy): probing
// names teaches nothing. Callers who may read it and may not do `operation` get the 403.
Status authorize_on_policy(const auth::User& caller, auth::Operation operation,
                           std::string_view name, const auth::PolicyApps& apps);

// The 429 of a call that needs a password hash while every KDF slot is busy.
Response kdf_busy();

// The 403 of creating a policy under a name held by one the caller may not read.
Status name_not_available(std::string_view name);

// The 403 of a call made before `user`, signed in with a one-time password, chose a new one.
Status password_change_pending(std::string_view user);

// Answers a non-OK status as problem+json (401 with WWW-Authenticate).
void respond_error(Exchange& exchange, const Status& status);

// Answers `exchange` with `response`: the OK an admin handler returns when it has answered.
Status respond_with(Exchange& exchange, Response response);

// What an admin handler returns when a helper (read_object, read_page, ...) has answered already.
inline Status already_answered() { return {}; }

}  // namespace sluice::http
