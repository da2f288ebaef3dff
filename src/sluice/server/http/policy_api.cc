// The policy endpoints of the admin API: list, create, read, update (optimistic: the body carries
// the version it was read at), delete and history, each checked by auth::authorize_policy.
#include <algorithm>
#include <charconv>

#include "sluice/auth/authorize.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/descriptors.h"
#include "sluice/policy/document.h"
#include "sluice/policy/history.h"
#include "sluice/server/http/admin_api.h"
#include "sluice/server/http/decision_api.h"
#include "sluice/server/http/json_fields.h"

namespace sluice::http {
namespace {

using nlohmann::json;
using policy::Policy;

// The policy document in the body (every problem named), or nullopt after answering 400.
std::optional<Policy> read_policy(Exchange& exchange) {
  Response error;
  std::optional<json> body = parse_json_body(exchange.request().body, error);
  if (!body) {
    exchange.respond(std::move(error));
    return std::nullopt;
  }
  policy::ParsedPolicy parsed = policy::policy_from_json(*body);
  if (!parsed.policy) {
    exchange.respond(problem_response(400, "invalid policy document", parsed.errors));
    return std::nullopt;
  }
  return std::move(parsed.policy);
}

Status named(const Status& status, std::string_view name) {
  if (status.ok()) return status;
  return {status.code(), "policy " + std::string(name) + ": " + status.message()};
}

// A change is authorized against the version the server read, and the write is a compare-and-set
// on the version the client names. Unless they are the same version, a caller could write over a
// version it was never checked against (one another admin had just widened to an app the caller
// does not own).
Status based_on_checked_version(const Policy& checked, std::int64_t expected) {
  if (checked.version == expected) return {};
  return policy::version_conflict(checked.name, checked.version, expected);
}

Response policy_response(int status, const Policy& stored) {
  Response response = json_response(status, policy::policy_to_json(stored));
  response.headers.push_back({"ETag", "\"" + std::to_string(stored.version) + "\""});
  return response;
}

// Issue 32 L6: a policy of some apps on a descriptor path that an enabled policy for any app
// ("*") also covers would replace that policy in those apps' domains (the domain's own tree is
// matched first) — an owner's `unlimited` policy switched an admin's "*" limit off. Only an
// admin may do that; anyone else gets a 400 naming descriptors.entries and the "*" policy.
std::optional<FieldError> replaces_any_app_policy(const auth::User& caller, const Policy& wanted,
                                                  const std::vector<Policy>& stored) {
  if (caller.admin || !wanted.descriptors) return std::nullopt;
  if (std::find(wanted.apps.begin(), wanted.apps.end(), "*") != wanted.apps.end()) {
    return std::nullopt;
  }
  for (const Policy& other : stored) {
    if (other.name == wanted.name || !other.enabled || !other.descriptors) continue;
    if (std::find(other.apps.begin(), other.apps.end(), "*") == other.apps.end()) continue;
    if (policy::descriptor_paths_overlap(wanted.descriptors->entries, other.descriptors->entries)) {
      return FieldError{"descriptors.entries",
                        "overlaps the descriptor path of policy " + other.name +
                            ", which applies to every app (\"*\"): a policy of some apps may "
                            "not replace it in their domains (only an admin may)"};
    }
  }
  return std::nullopt;
}

}  // namespace

Status authorize_on_policy(const auth::User& caller, auth::Operation operation,
                           std::string_view name, const auth::PolicyApps& apps) {
  if (!auth::authorize_policy(caller, auth::Operation::kRead, {.before = apps.before}).ok()) {
    return not_found("policy " + std::string(name) + " not found");
  }
  Status status = auth::authorize_policy(caller, operation, apps);
  if (status.ok()) return status;
  return {status.code(), "policy " + std::string(name) + ": " + status.message()};
}

Status AdminApi::list_policies(Exchange& exchange, const Principal& caller) {
  const std::optional<std::string> app = exchange.request().query_param("app");
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<Policy> all,
      policies_.list(app ? std::optional<std::string_view>(*app) : std::nullopt));
  json list = json::array();
  for (const Policy& p : all) {
    if (auth::can_read_policy(caller.user, p.apps)) list.push_back(policy::policy_to_json(p));
  }
  return respond_with(exchange, json_response(200, {{"policies", std::move(list)}}));
}

Status AdminApi::decision_stats(Exchange& exchange, const Principal& caller) {
  const std::optional<std::string> app = exchange.request().query_param("app");
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<Policy> all,
      policies_.list(app ? std::optional<std::string_view>(*app) : std::nullopt));
  const auto counts = decisions_
                          ? decisions_->counts()
                          : std::map<std::string, service::DecisionMetrics::Counts, std::less<>>{};
  json policies = json::object();
  for (const Policy& p : all) {
    if (!auth::can_read_policy(caller.user, p.apps)) continue;
    const auto it = counts.find(p.name);
    const service::DecisionMetrics::Counts c =
        it == counts.end() ? service::DecisionMetrics::Counts{} : it->second;
    policies[p.name] = {{"allowed", c.allowed},
                        {"denied", c.denied},
                        {"shadow_denied", c.shadow_denied},
                        {"degraded", c.degraded}};
  }
  return respond_with(
      exchange, json_response(200, {{"at", clock_.now()}, {"policies", std::move(policies)}}));
}

Status AdminApi::policy_rates(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kRead));
  json points = json::array();
  if (history_ != nullptr) {
    for (const service::DecisionHistory::Point& p : history_->points(stored.name)) {
      points.push_back({{"at", p.at},
                        {"allowed", p.allowed},
                        {"denied", p.denied},
                        {"shadow_denied", p.shadow_denied},
                        {"degraded", p.degraded}});
    }
  }
  return respond_with(exchange,
                      json_response(200, {{"policy", stored.name}, {"points", std::move(points)}}));
}

StatusOr<Policy> AdminApi::stored_policy(const Exchange& exchange, const Principal& caller,
                                         auth::Operation operation) {
  const std::string name(exchange.param("name"));
  SLUICE_ASSIGN_OR_RETURN(Policy stored, policies_.get(name));
  SLUICE_RETURN_IF_ERROR(authorize_on_policy(caller.user, operation, name,
                                             {.before = stored.apps, .after = stored.apps}));
  return stored;
}

Status AdminApi::create_policy(Exchange& exchange, const Principal& caller) {
  std::optional<Policy> wanted = read_policy(exchange);
  if (!wanted) return already_answered();
  if (Status s =
          auth::authorize_policy(caller.user, auth::Operation::kCreate, {.after = wanted->apps});
      !s.ok()) {
    return named(s, wanted->name);
  }
  SLUICE_ASSIGN_OR_RETURN(const std::optional<FieldError> overlap,
                          overlapping_descriptor_path(caller, *wanted));
  if (overlap)
    return respond_with(exchange, problem_response(400, "invalid policy document", {*overlap}));
  const std::string name = wanted->name;
  StatusOr<Policy> created = policies_.create(std::move(*wanted), caller.user.name);
  if (!created.ok()) {
    // Names are global (they key the store's state), so a taken name must be refused; but a
    // caller who may not read the policy holding it learns no more than GET's 404 tells:
    // not "already exists", the 403 of a name it may not use (issue 32, L3).
    if (created.status().code() == StatusCode::kAlreadyExists) {
      StatusOr<Policy> holder = policies_.get(name);
      if (holder.ok() && !auth::can_read_policy(caller.user, holder->apps)) {
        return name_not_available(name);
      }
    }
    return created.status();
  }
  policies_changed_();
  Response response = policy_response(201, *created);
  response.headers.push_back({"Location", "/v1/policies/" + created->name});
  return respond_with(exchange, std::move(response));
}

StatusOr<std::optional<FieldError>> AdminApi::overlapping_descriptor_path(const Principal& caller,
                                                                          const Policy& wanted) {
  if (caller.user.admin || !wanted.descriptors) return std::optional<FieldError>();
  SLUICE_ASSIGN_OR_RETURN(const std::vector<Policy> stored, policies_.list(std::string_view("*")));
  return replaces_any_app_policy(caller.user, wanted, stored);
}

Status name_not_available(std::string_view name) {
  return {StatusCode::kPermissionDenied,
          "policy " + std::string(name) +
              ": this name is not available to your apps (policy names are shared by all apps); "
              "choose another"};
}

Status AdminApi::get_policy(Exchange& exchange, const Principal& caller) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy stored,
                          stored_policy(exchange, caller, auth::Operation::kRead));
  return respond_with(exchange, policy_response(200, stored));
}

Status AdminApi::update_policy(Exchange& exchange, const Principal& caller) {
  const std::string name(exchange.param("name"));
  std::optional<Policy> wanted = read_policy(exchange);
  if (!wanted) return already_answered();
  std::vector<FieldError> errors;
  if (wanted->name != name) {
    errors.push_back({"name", "must be \"" + name + "\", the policy in the URL (no renaming)"});
  }
  if (wanted->version <= 0) {
    errors.push_back({"version",
                      "is required: the version the change is based on, so a "
                      "concurrent change is refused instead of lost"});
  }
  if (!errors.empty()) {
    return respond_with(exchange, problem_response(400, "invalid policy update", errors));
  }
  SLUICE_ASSIGN_OR_RETURN(Policy current, policies_.get(name));
  SLUICE_RETURN_IF_ERROR(authorize_on_policy(caller.user, auth::Operation::kUpdate, name,
                                             {.before = current.apps, .after = wanted->apps}));
  const std::int64_t expected = wanted->version;
  SLUICE_RETURN_IF_ERROR(based_on_checked_version(current, expected));
  SLUICE_ASSIGN_OR_RETURN(const std::optional<FieldError> overlap,
                          overlapping_descriptor_path(caller, *wanted));
  if (overlap)
    return respond_with(exchange, problem_response(400, "invalid policy document", {*overlap}));
  SLUICE_ASSIGN_OR_RETURN(Policy updated,
                          policies_.update(std::move(*wanted), expected, caller.user.name));
  policies_changed_();
  return respond_with(exchange, policy_response(200, updated));
}

Status AdminApi::delete_policy(Exchange& exchange, const Principal& caller) {
  std::optional<std::int64_t> expected;
  if (const std::optional<std::string> text = exchange.request().query_param("version")) {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc() || end != text->data() + text->size() || value <= 0) {
      return respond_with(exchange, problem_response(400, "invalid version",
                                                     {{"version", "must be a positive integer"}}));
    }
    expected = value;
  }
  SLUICE_ASSIGN_OR_RETURN(policy::Policy current,
                          stored_policy(exchange, caller, auth::Operation::kDelete));
  SLUICE_RETURN_IF_ERROR(based_on_checked_version(current, expected.value_or(current.version)));
  SLUICE_RETURN_IF_ERROR(
      policies_.remove(current.name, expected.value_or(current.version), caller.user.name));
  policies_changed_();
  return respond_with(exchange, {.status = 204, .content_type = ""});
}

Status AdminApi::policy_history(Exchange& exchange, const Principal& caller) {
  const std::string name(exchange.param("name"));
  SLUICE_ASSIGN_OR_RETURN(std::vector<policy::PolicyChange> history, policies_.history(name));
  if (history.empty()) {
    // The words of a missing policy, which an unreadable one gets too.
    return not_found("policy " + name + " not found");
  }
  // Read permission follows the policy as it is now or, once deleted, as it last was.
  StatusOr<Policy> current = policies_.get(name);
  if (!current.ok() && current.status().code() != StatusCode::kNotFound) {
    return current.status();
  }
  const std::vector<std::string> apps =
      current.ok() ? current->apps : policy::last_listed_apps(history);
  SLUICE_RETURN_IF_ERROR(
      authorize_on_policy(caller.user, auth::Operation::kRead, name, {.before = apps}));
  // Only the documents the caller may read: the name may have belonged to other apps before.
  const std::vector<policy::PolicyChange> readable =
      policy::readable_changes(history, [&](const std::vector<std::string>& listed) {
        return auth::can_read_policy(caller.user, listed);
      });
  json changes = json::array();
  for (const policy::PolicyChange& change : readable) {
    changes.push_back(policy::change_to_json(change));
  }
  return respond_with(exchange,
                      json_response(200, {{"policy", name}, {"changes", std::move(changes)}}));
}

}  // namespace sluice::http
