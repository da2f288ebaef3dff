// `sluice policy list|get|create|update|delete|history|export|import`: policies in the SQL
// store, as YAML or JSON documents (DESIGN.md §5a), with envoyproxy/ratelimit import. Without
// --as the command acts as the operator (whoever can open the database can change it anyway);
// with --as USER it applies that user's permissions (docs/authorization.md) and records USER
// as the actor. Exit codes: docs/cli.md.
#include <CLI/CLI.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "sluice/auth/authorize.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/describe.h"
#include "sluice/policy/document.h"
#include "sluice/policy/envoy_import.h"
#include "sluice/policy/history.h"

namespace sluice::cli {
namespace {

using nlohmann::json;
using policy::Policy;

struct PolicyOptions {
  CommonOptions common;
  std::string format;  // empty: the command's default
  std::string app;
  std::string name;
  std::string file;
  std::int64_t version = 0;  // 0: not given
  std::string output;
  std::string import_format = "sluice";
  bool dry_run = false;
  bool allow_lossy = false;
  // --format envoy: envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (a denied hit
  // is not counted); by default denied hits are counted, as it counts them by default.
  bool stop_increment_when_over_limit = false;
};

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string text;
  for (const std::string& item : items) text += (text.empty() ? "" : std::string(separator)) + item;
  return text;
}

Status check_format(const std::string& format, std::initializer_list<std::string_view> allowed) {
  for (std::string_view name : allowed) {
    if (format == name) return {};
  }
  std::vector<std::string> names(allowed.begin(), allowed.end());
  return invalid_argument("--format: must be one of " + join(names, ", ") + " (got \"" + format +
                          "\")");
}

// `value` as an instant format_timestamp spells as a date, if it is an integer in that range.
std::optional<Micros> date_instant(const json& value) {
  if (value.is_number_unsigned()) {
    const std::uint64_t at = value.get<std::uint64_t>();
    if (at > static_cast<std::uint64_t>(kMaxTimestamp)) return std::nullopt;
    return static_cast<Micros>(at);
  }
  if (!value.is_number_integer()) return std::nullopt;
  const Micros at = value.get<Micros>();
  if (at < kMinTimestamp || at > kMaxTimestamp) return std::nullopt;
  return at;
}

// The instants of policy documents and history entries (created_at, updated_at, at) as ISO 8601
// text, which policy_from_text reads back.
json with_readable_times(json value) {
  if (value.is_array()) {
    for (json& item : value) item = with_readable_times(std::move(item));
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const bool instant = it.key() == "created_at" || it.key() == "updated_at" || it.key() == "at";
      if (!instant) {
        it.value() = with_readable_times(std::move(it.value()));
      } else if (const std::optional<Micros> at = date_instant(it.value())) {
        it.value() = format_timestamp(*at);
      }
    }
  }
  return value;
}

// JSON is for programs: exactly what the HTTP API returns, instants in microseconds since the
// epoch. YAML is for people: instants as ISO 8601 text (docs/cli.md, "Times").
std::string render(const json& value, const std::string& format) {
  return format == "json" ? value.dump(2) + "\n" : policy::json_to_yaml(with_readable_times(value));
}

Status authorize(const Session& session, auth::Operation operation, const auth::PolicyApps& apps,
                 std::string_view name) {
  if (!session.as) return {};
  Status status = auth::authorize_policy(*session.as, operation, apps);
  if (status.ok()) return status;
  return {status.code(), "policy " + std::string(name) + ": " + status.message()};
}

// The policies the session may read, optionally only those listing `app`.
StatusOr<std::vector<Policy>> readable_policies(const Session& session, const std::string& app) {
  StatusOr<std::vector<Policy>> policies =
      session.policies->list(app.empty() ? std::nullopt : std::optional<std::string_view>(app));
  if (!policies.ok() || !session.as) return policies;
  std::erase_if(*policies,
                [&](const Policy& p) { return !auth::can_read_policy(*session.as, p.apps); });
  return policies;
}

Status run_list(const Run& run, const PolicyOptions& options) {
  const std::string format = options.format.empty() ? "table" : options.format;
  SLUICE_RETURN_IF_ERROR(check_format(format, {"table", "yaml", "json"}));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<Policy> policies,
                          readable_policies(session, options.app));
  if (format != "table") {
    json list = json::array();
    for (const Policy& p : policies) list.push_back(policy::policy_to_json(p));
    run.out() << render(list, format);
    return {};
  }
  if (policies.empty()) {
    run.note() << "no policies" << (options.app.empty() ? "" : " for app " + options.app) << "\n";
    return {};
  }
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "VERSION", "MODE", "ENABLED", "APPS", "LIMITS"}};
  for (const Policy& p : policies) {
    rows.push_back({p.name, std::to_string(p.version), std::string(policy::mode_name(p.mode)),
                    p.enabled ? "yes" : "no", join(p.apps, ","),
                    policy::describe_limits(p.limits)});
  }
  run.out() << format_table(rows);
  return {};
}

Status run_get(const Run& run, const PolicyOptions& options) {
  const std::string format = options.format.empty() ? "yaml" : options.format;
  SLUICE_RETURN_IF_ERROR(check_format(format, {"yaml", "json"}));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const Policy policy, session.policies->get(options.name));
  SLUICE_RETURN_IF_ERROR(
      authorize(session, auth::Operation::kRead, {.before = policy.apps}, options.name));
  run.out() << render(policy::policy_to_json(policy), format);
  return {};
}

// Reads the one policy document of --file / FILE; an invalid one names every field.
StatusOr<Policy> read_document(const Run& run, const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, read_input(run.env(), file));
  policy::ParsedPolicy parsed = policy::policy_from_text(text);
  if (!parsed.policy) return invalid_fields("invalid policy document " + file + ":", parsed.errors);
  return std::move(*parsed.policy);
}

Status run_create(const Run& run, const PolicyOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(Policy policy, read_document(run, options.file));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_RETURN_IF_ERROR(
      authorize(session, auth::Operation::kCreate, {.after = policy.apps}, policy.name));
  SLUICE_ASSIGN_OR_RETURN(const Policy created,
                          session.policies->create(std::move(policy), session.actor));
  run.out() << "created policy " << created.name << " (version " << created.version << ")\n";
  return {};
}

// The version an update must find: --version or the document's, which must agree.
StatusOr<std::int64_t> expected_version(std::int64_t flag, const Policy& policy) {
  if (flag != 0 && policy.version != 0 && flag != policy.version) {
    return invalid_argument("version: --version " + std::to_string(flag) +
                            " and the document's version " + std::to_string(policy.version) +
                            " disagree");
  }
  const std::int64_t expected = flag != 0 ? flag : policy.version;
  if (expected <= 0) {
    return invalid_argument(
        "version: required, as --version N or the document's version field: the version you "
        "edited, so a change made meanwhile is not overwritten (see `sluice policy get " +
        policy.name + "`)");
  }
  return expected;
}

Status run_update(const Run& run, const PolicyOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(Policy policy, read_document(run, options.file));
  SLUICE_ASSIGN_OR_RETURN(const std::int64_t expected, expected_version(options.version, policy));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const Policy current, session.policies->get(policy.name));
  SLUICE_RETURN_IF_ERROR(authorize(session, auth::Operation::kUpdate,
                                   {.before = current.apps, .after = policy.apps}, policy.name));
  SLUICE_ASSIGN_OR_RETURN(const Policy updated,
                          session.policies->update(std::move(policy), expected, session.actor));
  run.out() << "updated policy " << updated.name << " to version " << updated.version << "\n";
  return {};
}

Status run_delete(const Run& run, const PolicyOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const Policy current, session.policies->get(options.name));
  SLUICE_RETURN_IF_ERROR(
      authorize(session, auth::Operation::kDelete, {.before = current.apps}, options.name));
  // Without --version, the version just read: a change committed in between still conflicts.
  const std::int64_t expected = options.version != 0 ? options.version : current.version;
  SLUICE_RETURN_IF_ERROR(session.policies->remove(options.name, expected, session.actor));
  run.out() << "deleted policy " << options.name << " (was version " << expected << ")\n";
  return {};
}

// The apps a policy's history is readable by: the policy's as it is now or, once deleted, as it
// last was.
StatusOr<std::vector<std::string>> apps_of_history(
    const Session& session, const std::string& name,
    const std::vector<policy::PolicyChange>& history) {
  StatusOr<Policy> current = session.policies->get(name);
  if (current.ok()) return std::move(current->apps);
  if (current.status().code() == StatusCode::kNotFound) return policy::last_listed_apps(history);
  return current.status();
}

Status run_history(const Run& run, const PolicyOptions& options) {
  const std::string format = options.format.empty() ? "table" : options.format;
  SLUICE_RETURN_IF_ERROR(check_format(format, {"table", "yaml", "json"}));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<policy::PolicyChange> history,
                          session.policies->history(options.name));
  if (history.empty()) {
    return not_found("no policy named " + options.name + " and no history for one");
  }
  SLUICE_ASSIGN_OR_RETURN(const std::vector<std::string> apps,
                          apps_of_history(session, options.name, history));
  SLUICE_RETURN_IF_ERROR(
      authorize(session, auth::Operation::kRead, {.before = apps}, options.name));
  if (format != "table") {
    json list = json::array();
    for (const policy::PolicyChange& change : history) {
      list.push_back(policy::change_to_json(change));
    }
    run.out() << render(list, format);
    return {};
  }
  std::vector<std::vector<std::string>> rows = {{"ID", "AT", "ACTION", "VERSION", "ACTOR"}};
  for (const policy::PolicyChange& change : history) {
    rows.push_back(
        {std::to_string(change.id), format_time(change.at),
         std::string(policy::change_action_name(change.action)),
         change.action == policy::ChangeAction::kDelete ? "-" : std::to_string(change.version),
         change.actor});
  }
  run.out() << format_table(rows);
  return {};
}

Status run_export(const Run& run, const PolicyOptions& options) {
  const std::string format = options.format.empty() ? "yaml" : options.format;
  SLUICE_RETURN_IF_ERROR(check_format(format, {"yaml", "json"}));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<Policy> policies,
                          readable_policies(session, options.app));
  json list = json::array();
  for (const Policy& p : policies) list.push_back(policy::policy_to_json(p));
  const std::string text = render(list, format);
  if (options.output.empty() || options.output == "-") {
    run.out() << text;
    return {};
  }
  std::ofstream file(options.output, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) return invalid_argument("--output: cannot write " + options.output);
  run.note() << "exported " << policies.size() << " policies to " << options.output << "\n";
  return {};
}

// The policies of an import file, in either of its formats; the envoy import's warnings are
// printed as notes.
StatusOr<std::vector<Policy>> policies_to_import(const Run& run, const PolicyOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, read_input(run.env(), options.file));
  if (options.import_format != "envoy") {
    policy::ParsedPolicies parsed = policy::policies_from_text(text);
    if (!parsed.errors.empty()) {
      return invalid_fields("invalid policy documents in " + options.file +
                                " (fields are prefixed with the document's index, from 0); "
                                "nothing was imported:",
                            parsed.errors);
    }
    return std::move(parsed.policies);
  }
  policy::EnvoyImport converted =
      policy::import_envoy_config(text, {.denied_cost = options.stop_increment_when_over_limit
                                                            ? algorithm::DeniedCost::kFree
                                                            : algorithm::DeniedCost::kCounted});
  for (const algorithm::FieldError& warning : converted.warnings) {
    run.note() << "warning: " << (warning.field.empty() ? "" : warning.field + ": ")
               << warning.message << "\n";
  }
  if (!converted.errors.empty()) {
    return invalid_fields(
        "the envoy config in " + options.file + " cannot be imported; nothing was imported:",
        converted.errors);
  }
  if (!converted.warnings.empty() && !options.allow_lossy) {
    return invalid_argument(
        std::to_string(converted.warnings.size()) +
        " part(s) of the envoy config cannot be represented (warnings above); nothing was "
        "imported. Re-run with --allow-lossy to import the rest.");
  }
  return std::move(converted.policies);
}

Status run_import(const Run& run, const PolicyOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const std::vector<Policy> policies, policies_to_import(run, options));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kPolicies));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<Policy> existing, session.policies->list());
  std::map<std::string, const Policy*, std::less<>> by_name;
  for (const Policy& p : existing) by_name[p.name] = &p;

  std::vector<std::string> denials;
  std::size_t created = 0;
  for (const Policy& p : policies) {
    const auto it = by_name.find(p.name);
    const Status s = it == by_name.end()
                         ? authorize(session, auth::Operation::kCreate, {.after = p.apps}, p.name)
                         : authorize(session, auth::Operation::kUpdate,
                                     {.before = it->second->apps, .after = p.apps}, p.name);
    if (!s.ok()) denials.push_back(s.message());
    if (it == by_name.end()) ++created;
  }
  if (!denials.empty()) {
    return with_items(StatusCode::kPermissionDenied,
                      "permission denied; nothing was imported:", denials);
  }
  if (options.dry_run) {
    for (const Policy& p : policies) {
      const auto it = by_name.find(p.name);
      run.out() << (it == by_name.end() ? "would create " : "would update ") << p.name;
      if (it != by_name.end()) run.out() << " (now version " << it->second->version << ")";
      run.out() << "\n";
    }
    run.out() << "dry run: " << policies.size() << " policies (" << created << " new, "
              << policies.size() - created << " updated), nothing changed\n";
    return {};
  }
  SLUICE_RETURN_IF_ERROR(session.policies->import(policies, session.actor));
  run.out() << "imported " << policies.size() << " policies (" << created << " new, "
            << policies.size() - created << " updated)\n";
  return {};
}

}  // namespace

void add_policy_command(CLI::App& app, std::shared_ptr<const Environment> env) {
  auto options = std::make_shared<PolicyOptions>();
  CLI::App* group = app.add_subcommand(
      "policy",
      "Manage policies in the policy database: list, get, create, update, delete, history, "
      "export and import (YAML, JSON or an envoyproxy/ratelimit config)");
  group->require_subcommand(1);
  group->fallthrough();
  group
      ->add_option("--policies", options->common.policies_url,
                   "Policy database URL: sqlite:///PATH, mysql://user:pass@host:port/db or "
                   "postgresql://user:pass@host:port/db (default: $SLUICE_POLICIES, else " +
                       env->default_policies_url + ")")
      ->envname("SLUICE_POLICIES");
  group->add_option("--as", options->common.as_user,
                    "Act as this Sluice user: apply their permissions and record them as the "
                    "author (default: act as the operator, recorded as cli:$USER)");

  // Adds a leaf subcommand whose callback runs `body` and reports its exit code.
  const auto leaf = [&](const std::string& name, const std::string& description,
                        Status (*body)(const Run&, const PolicyOptions&)) {
    CLI::App* command = group->add_subcommand(name, description);
    command->callback([env, options, name, body] {
      const Run run(*env, "policy " + name);
      env->exit(run.finish(body(run, *options)));
    });
    return command;
  };
  const auto add_format = [&](CLI::App* command, const std::string& choices,
                              const std::string& default_format) {
    command->add_option("--format", options->format,
                        "Output format: " + choices + " (default: " + default_format + ")");
  };

  CLI::App* list =
      leaf("list", "List the policies, each limit in words (with --as: those the user may read)",
           run_list);
  list->add_option("--app", options->app, "Only policies listing this app (or \"*\")");
  add_format(list, "table, yaml, json", "table");

  CLI::App* get = leaf("get",
                       "Print one policy document (times: ISO 8601 UTC in YAML, microseconds "
                       "since the epoch in JSON)",
                       run_get);
  get->add_option("name", options->name, "Policy name")->required();
  add_format(get, "yaml, json", "yaml");

  CLI::App* create =
      leaf("create", "Create a policy from a YAML or JSON document (version 1)", run_create);
  create->add_option("file", options->file, "Policy document; - reads standard input")->required();

  CLI::App* update = leaf(
      "update",
      "Replace a policy with a document; refused when the policy changed since the version you "
      "edited",
      run_update);
  update->add_option("file", options->file, "Policy document; - reads standard input")->required();
  update
      ->add_option("--version", options->version,
                   "The version the document was edited from (default: the document's version "
                   "field; one of the two is required)")
      ->check(CLI::Range(std::int64_t{1}, INT64_MAX));

  CLI::App* remove = leaf("delete", "Delete a policy (its history stays)", run_delete);
  remove->add_option("name", options->name, "Policy name")->required();
  remove
      ->add_option("--version", options->version,
                   "Delete only if the policy is still at this version (default: its current one)")
      ->check(CLI::Range(std::int64_t{1}, INT64_MAX));

  CLI::App* history =
      leaf("history", "Show a policy's changes, oldest first (also after deletion)", run_history);
  history->add_option("name", options->name, "Policy name")->required();
  add_format(history, "table, yaml, json (with the old and new documents)", "table");

  CLI::App* exporter =
      leaf("export", "Write the policies as one YAML or JSON list (re-importable)", run_export);
  exporter->add_option("--app", options->app, "Only policies listing this app (or \"*\")");
  exporter->add_option("--output,-o", options->output, "Write to this file (default: stdout)");
  add_format(exporter, "yaml, json", "yaml");

  CLI::App* importer = leaf(
      "import",
      "Create or update every policy of a file in one transaction: all or nothing. Every error "
      "is reported with its document's index",
      run_import);
  importer
      ->add_option("file", options->file,
                   "A YAML/JSON list of policy documents (as exported), YAML documents separated "
                   "by ---, or an envoyproxy/ratelimit config with --format envoy; - reads "
                   "standard input")
      ->required();
  importer
      ->add_option("--format", options->import_format,
                   "sluice (policy documents, the default) or envoy (an envoyproxy/ratelimit "
                   "YAML config: domain -> app, descriptors -> fixed_window policies)")
      ->check(CLI::IsMember({"sluice", "envoy"}));
  importer->add_flag("--dry-run", options->dry_run,
                     "Check everything and print what would be created or updated; change "
                     "nothing");
  importer->add_flag("--allow-lossy", options->allow_lossy,
                     "With --format envoy: import even though parts of the config will answer "
                     "or measure differently (each is printed as a warning)");
  importer->add_flag(
      "--stop-cache-key-increment-when-overlimit", options->stop_increment_when_over_limit,
      "With --format envoy: a denied request counts nothing, as envoyproxy/ratelimit "
      "with STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true (the imported windows get "
      "denied_cost: free); by default denied hits are counted, as it does by "
      "default");
}

}  // namespace sluice::cli
