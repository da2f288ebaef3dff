// One subject's rate-limit state under a policy, for the people who run it: a peek (anyone who
// may read the policy) showing each limit's budget, when a request of a given cost would be
// allowed (a dry run: decided as an acquire would be, recorded nowhere) and a concurrency
// limit's leases; a reset (forget the subject, as if never seen) and the release of one lease
// (the policy's owners: both hand the subject budget).
#include <charconv>

#include "sluice/auth/authorize.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/service/decision.h"

namespace sluice::http {

using nlohmann::json;

namespace {

// At most this many leases are listed per limit (with the full count beside them): a limit of
// thousands of leases would otherwise make the answer as large as the limit.
constexpr std::size_t kListedLeases = 100;
// What a reader who may not release leases sees of an id: enough to tell leases apart, not
// enough to release one (an id is the capability /v1/leases/{lease}/release takes).
constexpr std::size_t kShortLeaseId = 8;

json retry_after_ms(const algorithm::Verdict& v) {
  return v.retry_after ? json(service::millis_rounded_up(*v.retry_after)) : json(nullptr);
}

// The ?cost= of a peek: 1 when absent; nullopt after answering 400.
std::optional<std::int64_t> dry_run_cost(Exchange& exchange) {
  const std::optional<std::string> text = exchange.request().query_param("cost");
  if (!text) return 1;
  std::int64_t cost = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), cost);
  if (ec != std::errc() || end != text->data() + text->size() || cost < 0) {
    exchange.respond(
        problem_response(400, "invalid cost", {{"cost", "must be an integer of 0 or more"}}));
    return std::nullopt;
  }
  return cost;
}

}  // namespace

Status AdminApi::peek_subject(Exchange& exchange, const Principal& caller) {
  const std::optional<std::int64_t> cost = dry_run_cost(exchange);
  if (!cost) return already_answered();
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kRead));
  const store::SubjectRef ref{
      .policy = stored.name, .limits = stored.limits, .subject = exchange.param("key")};
  SLUICE_RETURN_IF_ERROR(store::validate_subject_ref(ref));
  // Three store calls, each consistent in itself; between them the state may move a little.
  SLUICE_ASSIGN_OR_RETURN(std::vector<algorithm::Verdict> verdicts, store_.inspect(ref));
  SLUICE_ASSIGN_OR_RETURN(store::DryRun run, store_.dry_run(ref, *cost));
  SLUICE_ASSIGN_OR_RETURN(std::vector<store::LimitLeases> leases,
                          store_.leases(ref, kListedLeases));
  const bool may_release = authorize_on_policy(caller.user, auth::Operation::kUpdate, stored.name,
                                               {.before = stored.apps, .after = stored.apps})
                               .ok();

  json limits = json::array();
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    const algorithm::Verdict& v = verdicts[i];
    const algorithm::Verdict& would = run.limits[i];
    limits.push_back({{"index", i},
                      {"algorithm", policy::limit_to_json(stored.limits[i])["algorithm"]},
                      {"limit", v.limit},
                      {"remaining", v.remaining},
                      {"reset_after_ms", service::millis_rounded_up(v.reset_after)},
                      {"allowed", would.allowed},
                      {"retry_after_ms", retry_after_ms(would)},
                      {"never", !would.allowed && !would.retry_after}});
  }
  for (const store::LimitLeases& held : leases) {
    json listed = json::array();
    for (const store::HeldLease& lease : held.leases) {
      listed.push_back({{"id", may_release ? lease.id : lease.id.substr(0, kShortLeaseId)},
                        {"expires_after_ms", service::millis_rounded_up(lease.expires_after)},
                        {"cost", lease.cost}});
    }
    json& limit = limits[held.limit_index];
    limit["lease_count"] = held.count;
    limit["leased_units"] = held.units;
    limit["leases"] = std::move(listed);
  }
  algorithm::Verdict decided = run.policy.verdict;
  json penalty = nullptr;
  if (stored.penalty) {
    store::SubjectRef boxed = ref;
    boxed.penalty = &*stored.penalty;
    SLUICE_ASSIGN_OR_RETURN(store::PenaltyStatus box, store_.penalty(boxed));
    penalty = {
        {"blocked", box.blocked_until.has_value()},
        {"blocked_until",
         box.blocked_until ? json(service::millis_rounded_up(*box.blocked_until)) : json(nullptr)},
        {"blocked_for_ms",
         box.blocked_for ? json(service::millis_rounded_up(*box.blocked_for)) : json(nullptr)},
        {"blocks", box.blocks},
        {"strikes", box.strikes},
        {"after", stored.penalty->after},
        {"may_lift", may_release}};
    // An acquire now would meet the block (algorithm/penalty.h deny_for_block): so does the run.
    if (box.blocked_until) {
      algorithm::deny_for_block(decided, *box.blocked_until, *box.blocked_until - *box.blocked_for);
    }
  }
  json dry_run = {{"cost", *cost},
                  {"allowed", decided.allowed},
                  {"retry_after_ms", retry_after_ms(decided)},
                  {"never", !decided.allowed && !decided.retry_after},
                  {"limit_index", run.policy.limit_index}};
  json answer = {{"policy", stored.name},
                 {"key", ref.subject},
                 {"limits", std::move(limits)},
                 {"dry_run", std::move(dry_run)},
                 {"leases_full_ids", may_release}};
  if (!penalty.is_null()) answer["penalty"] = std::move(penalty);  // policies with a penalty box
  return respond_with(exchange, json_response(200, std::move(answer)));
}

Status AdminApi::lift_subject_penalty(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kUpdate));
  if (!stored.penalty) {
    return respond_with(
        exchange, problem_response(
                      409, "policy \"" + stored.name + "\" has no penalty box: nothing to lift"));
  }
  const store::SubjectRef ref{.policy = stored.name,
                              .limits = stored.limits,
                              .subject = exchange.param("key"),
                              .penalty = &*stored.penalty};
  SLUICE_RETURN_IF_ERROR(store::validate_subject_ref(ref));
  SLUICE_ASSIGN_OR_RETURN(bool lifted, store_.lift_penalty(ref));
  if (subject_cleared_) subject_cleared_(ref.policy, ref.subject);
  return respond_with(exchange, json_response(200, {{"lifted", lifted}}));
}

Status AdminApi::reset_subject(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kUpdate));
  const store::SubjectRef ref{
      .policy = stored.name, .limits = stored.limits, .subject = exchange.param("key")};
  SLUICE_RETURN_IF_ERROR(store::validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(store_.reset(ref));
  if (subject_cleared_) subject_cleared_(ref.policy, ref.subject);
  return respond_with(exchange, {.status = 204, .content_type = ""});
}

Status AdminApi::release_subject_lease(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kUpdate));
  const store::SubjectRef ref{
      .policy = stored.name, .limits = stored.limits, .subject = exchange.param("key")};
  SLUICE_RETURN_IF_ERROR(store::validate_subject_ref(ref));
  SLUICE_ASSIGN_OR_RETURN(
      bool released,
      store::lease_now(store_, ref, store::LeaseOperation::kRelease, exchange.param("lease")));
  return respond_with(exchange, json_response(200, {{"released", released}}));
}

}  // namespace sluice::http
