// `sluice admin init | user add|list|delete|password | role set | app add|list |
// token create|list|revoke`: the accounts of DESIGN.md §4, in the same database as the
// policies. Secrets (generated passwords, tokens) are printed exactly once, on standard output,
// and never stored: only their hashes are. Without --as the command acts as the operator; with
// --as USER it applies that user's permissions (docs/authorization.md). Exit codes: docs/cli.md.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "sluice/auth/account_json.h"
#include "sluice/auth/authorize.h"
#include "sluice/auth/passwords.h"
#include "sluice/auth/tokens.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"

namespace sluice::cli {
namespace {

using auth::Role;
using auth::User;
using nlohmann::json;

struct AdminOptions {
  CommonOptions common;
  std::string user;
  std::string app;
  std::string role;
  std::string description;
  std::string token_id;
  std::string format = "table";
  std::string expires_in;  // token create: a duration from now
  std::string expires_at;  // token create: an RFC 3339 instant
  bool admin = false;
  bool password_stdin = false;
  bool keep_tokens = false;  // user password: leave the user's API tokens valid
};

Micros now(const Environment& env) { return env.clock != nullptr ? env.clock->now() : 0; }

Status authorize_admin(const Session& session, auth::AdminOperation operation) {
  return session.as ? auth::authorize_admin(*session.as, operation) : Status{};
}

Status authorize_tokens(const Session& session, std::string_view owner) {
  return session.as ? auth::authorize_tokens(*session.as, owner) : Status{};
}

// A new password for `user`: one line of standard input, checked for strength, or a generated
// one, which the caller prints once and stores as one-time (the console asks for a new one at
// the first login).
struct NewPassword {
  std::string password;
  std::string stored_hash;
  bool generated = false;
};

StatusOr<NewPassword> choose_password(const Run& run, const AdminOptions& options,
                                      const std::string& user) {
  NewPassword chosen{.generated = !options.password_stdin};
  if (chosen.generated) {
    SLUICE_ASSIGN_OR_RETURN(chosen.password, auth::generate_password());
  } else {
    std::getline(*run.env().in, chosen.password);
    if (!chosen.password.empty() && chosen.password.back() == '\r') chosen.password.pop_back();
    SLUICE_RETURN_IF_ERROR(auth::check_password_strength(chosen.password, user));
  }
  SLUICE_ASSIGN_OR_RETURN(const std::string hash, auth::hash_password(chosen.password));
  chosen.stored_hash = chosen.generated ? auth::mark_one_time(hash) : hash;
  return chosen;
}

void print_secret(const Run& run, std::string_view what, const std::string& secret) {
  run.note() << what << " (shown only now; store it safely):\n";
  run.out() << secret << "\n";
}

// A session that may do `operation` (always, acting as the operator).
StatusOr<Session> open_admin_session(const Run& run, const AdminOptions& options,
                                     auth::AdminOperation operation) {
  SLUICE_ASSIGN_OR_RETURN(Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  SLUICE_RETURN_IF_ERROR(authorize_admin(session, operation));
  return session;
}

Status run_init(const Run& run, const AdminOptions& options) {
  const std::string name = options.user.empty() ? "admin" : options.user;
  SLUICE_RETURN_IF_ERROR(validate_user_name(name, "--user"));
  SLUICE_ASSIGN_OR_RETURN(
      const Session session,
      open_session(run.env(), {.policies_url = options.common.policies_url}, Need::kAccounts));
  SLUICE_ASSIGN_OR_RETURN(const std::size_t admins, session.accounts->count_admins());
  if (admins > 0) {
    return {StatusCode::kFailedPrecondition,
            "refused: the database already has " + std::to_string(admins) +
                " admin(s); an admin adds users with `sluice admin user add`"};
  }
  SLUICE_ASSIGN_OR_RETURN(const std::string password, auth::generate_password());
  SLUICE_ASSIGN_OR_RETURN(const std::string hash, auth::hash_password(password));
  const User user{.name = name, .admin = true, .created_at = now(run.env())};
  // One-time: the web console asks for a new password at the first login.
  SLUICE_RETURN_IF_ERROR(session.accounts->create_user(user, auth::mark_one_time(hash)));
  run.note() << "created admin user " << name << "\n";
  print_secret(run, "its one-time password", password);
  return {};
}

Status run_user_add(const Run& run, const AdminOptions& options) {
  SLUICE_RETURN_IF_ERROR(validate_user_name(options.user, "user"));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_admin_session(run, options, auth::AdminOperation::kManageUsers));
  SLUICE_ASSIGN_OR_RETURN(const NewPassword chosen, choose_password(run, options, options.user));
  const User user{.name = options.user, .admin = options.admin, .created_at = now(run.env())};
  SLUICE_RETURN_IF_ERROR(session.accounts->create_user(user, chosen.stored_hash));
  run.note() << "created " << (options.admin ? "admin " : "") << "user " << options.user << "\n";
  if (chosen.generated) print_secret(run, "its one-time password", chosen.password);
  return {};
}

std::string roles_text(const User& user) {
  std::string text;
  for (const auto& [app, role] : user.roles) {
    text += (text.empty() ? "" : ",") + app + "=" + std::string(auth::role_name(role));
  }
  return text.empty() ? "-" : text;
}

Status run_user_list(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_admin_session(run, options, auth::AdminOperation::kManageUsers));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<User> users, session.accounts->list_users());
  if (options.format == "json") {
    json list = json::array();
    for (const User& user : users) list.push_back(auth::user_to_json(user));
    run.out() << list.dump(2) << "\n";
    return {};
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "ADMIN", "ROLES", "CREATED"}};
  for (const User& user : users) {
    rows.push_back(
        {user.name, user.admin ? "yes" : "no", roles_text(user), format_time(user.created_at)});
  }
  run.out() << format_table(rows);
  return {};
}

Status run_user_delete(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_admin_session(run, options, auth::AdminOperation::kManageUsers));
  SLUICE_RETURN_IF_ERROR(session.accounts->delete_user(options.user));
  run.out() << "deleted user " << options.user << " (and their tokens)\n";
  return {};
}

Status run_user_password(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  if (session.as && session.as->name != options.user) {
    SLUICE_RETURN_IF_ERROR(authorize_admin(session, auth::AdminOperation::kManageUsers));
  }
  SLUICE_RETURN_IF_ERROR(session.accounts->get_user(options.user).status());
  SLUICE_ASSIGN_OR_RETURN(const NewPassword chosen, choose_password(run, options, options.user));
  // One transaction for the password and the tokens: none made with the old one survives.
  SLUICE_ASSIGN_OR_RETURN(
      const std::size_t revoked,
      session.accounts->change_password_hash(
          options.user, chosen.stored_hash,
          options.keep_tokens ? auth::TokenRevocation::kKeep : auth::TokenRevocation::kRevokeAll));
  run.note() << "set the password of " << options.user << "\n";
  if (!options.keep_tokens) {
    run.note() << "revoked " << revoked << " API token" << (revoked == 1 ? "" : "s") << " of "
               << options.user << " (--keep-tokens keeps them)\n";
  }
  if (chosen.generated) print_secret(run, "the new one-time password", chosen.password);
  return {};
}

Status run_role_set(const Run& run, const AdminOptions& options) {
  const std::optional<Role> role = auth::parse_role(options.role);  // "none": no role
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_admin_session(run, options, auth::AdminOperation::kManageRoles));
  SLUICE_RETURN_IF_ERROR(session.accounts->set_role(options.user, options.app, role));
  if (role) {
    run.out() << options.user << " is now " << options.role << " of app " << options.app << "\n";
  } else {
    run.out() << options.user << " has no role on app " << options.app << " any more\n";
  }
  return {};
}

Status run_app_add(const Run& run, const AdminOptions& options) {
  SLUICE_RETURN_IF_ERROR(validate_app_name(options.app, "app"));
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_admin_session(run, options, auth::AdminOperation::kManageApps));
  const auth::App app{
      .name = options.app, .description = options.description, .created_at = now(run.env())};
  SLUICE_RETURN_IF_ERROR(session.accounts->create_app(app));
  run.out() << "created app " << options.app << "\n";
  return {};
}

Status run_app_list(const Run& run, const AdminOptions& options) {
  // Any user may list apps: the names are needed to write policies and are not secret.
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<auth::App> apps, session.accounts->list_apps());
  if (options.format == "json") {
    json list = json::array();
    for (const auth::App& app : apps) list.push_back(auth::app_to_json(app));
    run.out() << list.dump(2) << "\n";
    return {};
  }
  std::vector<std::vector<std::string>> rows = {{"NAME", "CREATED", "DESCRIPTION"}};
  for (const auth::App& app : apps) {
    rows.push_back({app.name, format_time(app.created_at), app.description});
  }
  run.out() << format_table(rows);
  return {};
}

// When a token made at `created` expires: --expires-in or --expires-at, or never.
StatusOr<std::optional<Micros>> token_expiry(const AdminOptions& options, Micros created) {
  if (!options.expires_in.empty() && !options.expires_at.empty()) {
    return invalid_argument("--expires-at: give --expires-in or --expires-at, not both");
  }
  if (!options.expires_in.empty()) {
    SLUICE_ASSIGN_OR_RETURN(const Micros duration,
                            invalid_input("--expires-in: ", parse_duration(options.expires_in)));
    if (duration <= 0 || duration > kMaxTimestamp - created) {
      return invalid_argument("--expires-in: must be positive and end by the year 9999");
    }
    return std::optional<Micros>(created + duration);
  }
  if (!options.expires_at.empty()) {
    SLUICE_ASSIGN_OR_RETURN(const Micros instant,
                            invalid_input("--expires-at: ", parse_timestamp(options.expires_at)));
    if (instant <= created) return invalid_argument("--expires-at: must be in the future");
    return std::optional<Micros>(instant);
  }
  return std::optional<Micros>();
}

Status run_token_create(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  const std::string owner = !options.user.empty() ? options.user
                            : session.as          ? session.as->name
                                                  : std::string();
  if (owner.empty()) {
    return invalid_argument("--user: required (whose token is it?) unless --as is given");
  }
  SLUICE_RETURN_IF_ERROR(authorize_tokens(session, owner));
  const Micros created = now(run.env());
  SLUICE_ASSIGN_OR_RETURN(const std::optional<Micros> expires_at, token_expiry(options, created));
  SLUICE_ASSIGN_OR_RETURN(
      const auth::IssuedToken issued,
      auth::create_token(*session.accounts, owner, options.description, created, expires_at));
  run.note() << "created token " << issued.record.id << " for " << owner;
  if (expires_at) run.note() << ", expires " << format_timestamp(*expires_at);
  run.note() << "\n";
  print_secret(run, "the token", issued.token);
  return {};
}

// Whose tokens `token list` shows: --user's, a non-admin's own, or everyone's.
StatusOr<std::vector<std::string>> token_owners(const Session& session,
                                                const AdminOptions& options) {
  if (!options.user.empty()) {
    SLUICE_RETURN_IF_ERROR(authorize_tokens(session, options.user));
    SLUICE_RETURN_IF_ERROR(session.accounts->get_user(options.user).status());
    return std::vector<std::string>{options.user};
  }
  if (session.as && !session.as->admin) return std::vector<std::string>{session.as->name};
  SLUICE_ASSIGN_OR_RETURN(const std::vector<User> users, session.accounts->list_users());
  std::vector<std::string> owners;
  for (const User& user : users) owners.push_back(user.name);
  return owners;
}

Status run_token_list(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<std::string> owners, token_owners(session, options));
  std::vector<auth::TokenRecord> tokens;
  for (const std::string& owner : owners) {
    SLUICE_ASSIGN_OR_RETURN(const std::vector<auth::TokenRecord> some,
                            session.accounts->list_tokens(owner));
    tokens.insert(tokens.end(), some.begin(), some.end());
  }
  if (options.format == "json") {
    json list = json::array();
    for (const auth::TokenRecord& token : tokens) list.push_back(auth::token_to_json(token));
    run.out() << list.dump(2) << "\n";
    return {};
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "USER", "CREATED", "EXPIRES", "DESCRIPTION"}};
  const Micros at = now(run.env());
  for (const auth::TokenRecord& token : tokens) {
    const std::string expires = !token.expires_at ? std::string("never")
                                : auth::token_expired(token, at)
                                    ? format_time(*token.expires_at) + " (expired)"
                                    : format_time(*token.expires_at);
    rows.push_back(
        {token.id, token.user, format_time(token.created_at), expires, token.description});
  }
  run.out() << format_table(rows);
  return {};
}

Status run_token_revoke(const Run& run, const AdminOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const Session session,
                          open_session(run.env(), options.common, Need::kAccounts));
  // Accept the whole token too: its id is the part after "sluice_".
  std::string id = options.token_id;
  if (StatusOr<auth::ParsedToken> parsed = auth::parse_token(id); parsed.ok()) id = parsed->id;
  SLUICE_ASSIGN_OR_RETURN(const auth::TokenRecord token, session.accounts->get_token(id));
  SLUICE_RETURN_IF_ERROR(authorize_tokens(session, token.user));
  SLUICE_RETURN_IF_ERROR(session.accounts->delete_token(id));
  run.out() << "revoked token " << id << " of " << token.user << "\n";
  return {};
}

}  // namespace

void add_admin_command(CLI::App& app, std::shared_ptr<const Environment> env) {
  auto options = std::make_shared<AdminOptions>();
  CLI::App* group = app.add_subcommand(
      "admin", "Manage users, per-app roles, apps and API tokens (stored with the policies)");
  group->require_subcommand(1);
  group->fallthrough();
  group
      ->add_option("--policies", options->common.policies_url,
                   "Database URL, the same as the policies' (default: $SLUICE_POLICIES, else " +
                       env->default_policies_url + ")")
      ->envname("SLUICE_POLICIES");
  group->add_option("--as", options->common.as_user,
                    "Act as this Sluice user and apply their permissions (default: act as the "
                    "operator; ignored by init)");

  const auto leaf = [&](CLI::App* parent, const std::string& name, const std::string& label,
                        const std::string& description,
                        Status (*body)(const Run&, const AdminOptions&)) {
    CLI::App* command = parent->add_subcommand(name, description);
    command->callback([env, options, label, body] {
      const Run run(*env, "admin " + label);
      env->exit(run.finish(body(run, *options)));
    });
    return command;
  };
  const auto add_format = [&](CLI::App* command) {
    command
        ->add_option("--format", options->format, "Output format: table or json (default: table)")
        ->check(CLI::IsMember({"table", "json"}));
  };
  const auto add_password_stdin = [&](CLI::App* command) {
    command->add_flag("--password-stdin", options->password_stdin,
                      "Read the password from the first line of standard input (at least " +
                          std::to_string(auth::kMinPasswordLength) +
                          " characters) instead of generating one");
  };

  CLI::App* init = leaf(group, "init", "init",
                        "Create the first admin with a generated one-time password, printed "
                        "once; refused when an admin exists",
                        run_init);
  init->add_option("--user", options->user, "The admin's name (default: admin)");

  CLI::App* user = group->add_subcommand("user", "Add, list or delete users; set passwords");
  user->require_subcommand(1);
  user->fallthrough();
  CLI::App* user_add = leaf(user, "add", "user add",
                            "Add a user; prints a generated one-time password unless "
                            "--password-stdin",
                            run_user_add);
  user_add->add_option("name", options->user, "User name: letters, digits, . _ - @")->required();
  user_add->add_flag("--admin", options->admin, "Make the user an admin (manages everything)");
  add_password_stdin(user_add);
  add_format(leaf(user, "list", "user list", "List users with their roles", run_user_list));
  leaf(user, "delete", "user delete", "Delete a user and their tokens (never the last admin)",
       run_user_delete)
      ->add_option("name", options->user, "User name")
      ->required();
  CLI::App* user_password = leaf(
      user, "password", "user password",
      "Set a user's password: generated and printed once, or --password-stdin", run_user_password);
  user_password->add_option("name", options->user, "User name")->required();
  add_password_stdin(user_password);
  user_password->add_flag("--keep-tokens", options->keep_tokens,
                          "Keep the user's API tokens (default: a new password revokes them)");

  CLI::App* role = group->add_subcommand("role", "Grant or revoke per-app roles");
  role->require_subcommand(1);
  role->fallthrough();
  CLI::App* role_set =
      leaf(role, "set", "role set",
           "Set USER's role on APP: viewer (reads its policies), owner (also writes them) or "
           "none",
           run_role_set);
  role_set->add_option("user", options->user, "User name")->required();
  role_set->add_option("app", options->app, "App name")->required();
  role_set->add_option("role", options->role, "viewer, owner or none")
      ->required()
      ->check(CLI::IsMember({"viewer", "owner", "none"}));

  CLI::App* apps = group->add_subcommand("app", "Add or list apps (the tenants policies list)");
  apps->require_subcommand(1);
  apps->fallthrough();
  CLI::App* app_add = leaf(apps, "add", "app add", "Add an app", run_app_add);
  app_add->add_option("name", options->app, "App name: letters, digits, . _ -")->required();
  app_add->add_option("--description", options->description, "What the app is");
  add_format(leaf(apps, "list", "app list", "List apps", run_app_list));

  CLI::App* token = group->add_subcommand("token", "Create, list or revoke API tokens");
  token->require_subcommand(1);
  token->fallthrough();
  CLI::App* token_create =
      leaf(token, "create", "token create",
           "Create an API token (sluice_<id>_<secret>), printed once; only its hash is stored",
           run_token_create);
  token_create->add_option("--user", options->user,
                           "Whose token (default: the --as user; required without --as)");
  token_create->add_option("--description", options->description,
                           "What the token is for, e.g. \"ci deploys\"");
  token_create->add_option("--expires-in", options->expires_in,
                           "Refuse the token after this long, e.g. 30d, 12h (default: never)");
  token_create->add_option("--expires-at", options->expires_at,
                           "Refuse the token from this RFC 3339 instant, e.g. "
                           "2027-01-01T00:00:00Z (default: never)");
  CLI::App* token_list =
      leaf(token, "list", "token list",
           "List token ids and descriptions (never secrets): one user's, or all (only the "
           "--as user's own for non-admins)",
           run_token_list);
  token_list->add_option("--user", options->user, "Only this user's tokens");
  add_format(token_list);
  leaf(token, "revoke", "token revoke", "Revoke a token by its id (or the whole token)",
       run_token_revoke)
      ->add_option("id", options->token_id, "Token id, as `token list` shows it")
      ->required();
}

}  // namespace sluice::cli
