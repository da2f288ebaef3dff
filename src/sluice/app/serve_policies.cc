#include "sluice/app/serve_policies.h"

#include "sluice/auth/passwords.h"
#include "sluice/core/logger.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/database_url.h"

namespace sluice::app {
namespace {

constexpr std::string_view kFirstAdmin = "admin";

std::vector<std::string> names_of(const std::vector<policy::Policy>& policies) {
  std::vector<std::string> names;
  names.reserve(policies.size());
  for (const policy::Policy& p : policies) names.push_back(p.name);
  return names;
}

// Imports --policy-file documents, or the demo policies into a database that never held any.
Status seed_policies(policy::PolicyRepository& policies, const ServePoliciesOptions& options) {
  if (!options.imported.empty()) {
    SLUICE_RETURN_IF_ERROR(policies.import(options.imported, "policy-file"));
    log_info("imported policy files", {{"policies", names_of(options.imported)}});
    return {};
  }
  SLUICE_ASSIGN_OR_RETURN(const std::int64_t revision, policies.revision());
  if (revision != 0) return {};  // policies were managed here before, even if none are left
  SLUICE_RETURN_IF_ERROR(policies.import(options.demo, "sluice (first start)"));
  log_info("first start: added the demo policies", {{"policies", names_of(options.demo)}});
  return {};
}

// Without any admin nobody could sign in to manage anything: make one and say its password once.
Status ensure_admin(auth::AccountRepository& accounts) {
  SLUICE_ASSIGN_OR_RETURN(const std::size_t admins, accounts.count_admins());
  if (admins > 0) return {};
  SLUICE_ASSIGN_OR_RETURN(const std::string password, auth::generate_password());
  SLUICE_ASSIGN_OR_RETURN(const std::string hash, auth::hash_password(password));
  Status created = accounts.create_user({.name = std::string(kFirstAdmin), .admin = true},
                                        auth::mark_one_time(hash));
  if (created.code() == StatusCode::kAlreadyExists) return {};  // another server was first
  SLUICE_RETURN_IF_ERROR(created);
  log_info("created the first admin; its one-time password is shown only now",
           {{"user", kFirstAdmin},
            {"password", password},
            {"change_with", "PUT /v1/users/admin/password or sluice admin user password"}});
  return {};
}

// open_serve_policies at `url`, its errors not yet located.
StatusOr<ServePolicies> open_at(const PolicyDatabase& database, const std::string& url,
                                const ServePoliciesOptions& options) {
  ServePolicies opened;
  SLUICE_ASSIGN_OR_RETURN(opened.policies, database.open_policies(url));
  SLUICE_ASSIGN_OR_RETURN(opened.accounts, database.open_accounts(url));
  SLUICE_RETURN_IF_ERROR(seed_policies(*opened.policies, options));
  SLUICE_RETURN_IF_ERROR(ensure_admin(*opened.accounts));
  SLUICE_ASSIGN_OR_RETURN(
      opened.cache,
      policy::PolicyCache::open(opened.policies, {.poll_interval = options.poll_interval}));
  log_info("policies loaded", {{"database", db::redact_database_url(url)},
                               {"revision", opened.cache->snapshot()->revision},
                               {"count", opened.cache->snapshot()->policies.size()}});
  return opened;
}

}  // namespace

StatusOr<ServePolicies> open_serve_policies(const PolicyDatabase& database,
                                            const ServePoliciesOptions& options) {
  const std::string url = options.url.empty() ? database.default_url : options.url;
  if (url.empty()) {
    return invalid_argument("policies: no default database location ($HOME is unknown); set one");
  }
  StatusOr<ServePolicies> opened = open_at(database, url, options);
  if (opened.ok()) return opened;
  // Every error names the database (without its password).
  const Status& error = opened.status();
  return Status(error.code(), "policies " + db::redact_database_url(url) + ": " + error.message());
}

}  // namespace sluice::app
