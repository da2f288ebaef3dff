#include "sluice/app/serve_policies.h"

#include "sluice/auth/passwords.h"
#include "sluice/core/logger.h"
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
    if (Status s = policies.import(options.imported, "policy-file"); !s.ok()) return s;
    log_info("imported policy files", {{"policies", names_of(options.imported)}});
    return {};
  }
  StatusOr<std::int64_t> revision = policies.revision();
  if (!revision.ok()) return revision.status();
  if (*revision != 0) return {};  // policies were managed here before, even if none are left
  if (Status s = policies.import(options.demo, "sluice (first start)"); !s.ok()) return s;
  log_info("first start: added the demo policies", {{"policies", names_of(options.demo)}});
  return {};
}

// Without any admin nobody could sign in to manage anything: make one and say its password once.
Status ensure_admin(auth::AccountRepository& accounts) {
  StatusOr<std::size_t> admins = accounts.count_admins();
  if (!admins.ok()) return admins.status();
  if (*admins > 0) return {};
  StatusOr<std::string> password = auth::generate_password();
  if (!password.ok()) return password.status();
  StatusOr<std::string> hash = auth::hash_password(*password);
  if (!hash.ok()) return hash.status();
  Status created = accounts.create_user({.name = std::string(kFirstAdmin), .admin = true},
                                        auth::mark_one_time(*hash));
  if (created.code() == StatusCode::kAlreadyExists) return {};  // another server was first
  if (!created.ok()) return created;
  log_info("created the first admin; its one-time password is shown only now",
           {{"user", kFirstAdmin},
            {"password", *password},
            {"change_with", "PUT /v1/users/admin/password or sluice admin user password"}});
  return {};
}

}  // namespace

StatusOr<ServePolicies> open_serve_policies(const PolicyDatabase& database,
                                            const ServePoliciesOptions& options) {
  const std::string url = options.url.empty() ? database.default_url : options.url;
  if (url.empty()) {
    return invalid_argument("policies: no default database location ($HOME is unknown); set one");
  }
  const auto located = [&url](const Status& s) {
    return Status(s.code(), "policies " + db::redact_database_url(url) + ": " + s.message());
  };
  ServePolicies opened;
  StatusOr<std::shared_ptr<policy::PolicyRepository>> policies = database.open_policies(url);
  if (!policies.ok()) return located(policies.status());
  opened.policies = std::move(*policies);
  StatusOr<std::shared_ptr<auth::AccountRepository>> accounts = database.open_accounts(url);
  if (!accounts.ok()) return located(accounts.status());
  opened.accounts = std::move(*accounts);
  if (Status s = seed_policies(*opened.policies, options); !s.ok()) return located(s);
  if (Status s = ensure_admin(*opened.accounts); !s.ok()) return located(s);
  StatusOr<std::unique_ptr<policy::PolicyCache>> cache =
      policy::PolicyCache::open(opened.policies, {.poll_interval = options.poll_interval});
  if (!cache.ok()) return located(cache.status());
  opened.cache = std::move(*cache);
  log_info("policies loaded", {{"database", db::redact_database_url(url)},
                               {"revision", opened.cache->snapshot()->revision},
                               {"count", opened.cache->snapshot()->policies.size()}});
  return opened;
}

}  // namespace sluice::app
