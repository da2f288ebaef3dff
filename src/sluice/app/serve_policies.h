// Where `sluice serve` finds its policies and accounts: the SQL database of --policies (default:
// the per-user SQLite file the `policy` and `admin` commands use), prepared on start — policy
// files given with --policy-file imported into it (all or nothing), the demo policy on a first
// start, and a first admin with a one-time password when there is none — and a PolicyCache over
// it, so decisions never query the database and changes arrive within one poll interval.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/auth/accounts.h"
#include "sluice/policy/policy.h"
#include "sluice/policy/policy_cache.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::app {

struct ServePolicies {
  std::shared_ptr<policy::PolicyRepository> policies;
  std::shared_ptr<auth::AccountRepository> accounts;
  std::unique_ptr<policy::PolicyCache> cache;
};

// How the database is reached (the CLI's Environment binds the SQL repositories; tests, fakes).
struct PolicyDatabase {
  std::function<StatusOr<std::shared_ptr<policy::PolicyRepository>>(const std::string& url)>
      open_policies;
  std::function<StatusOr<std::shared_ptr<auth::AccountRepository>>(const std::string& url)>
      open_accounts;
  std::string default_url;  // when ServePoliciesOptions::url is empty
};

struct ServePoliciesOptions {
  std::string url;                       // empty: PolicyDatabase::default_url
  std::vector<policy::Policy> imported;  // from --policy-file; none: the demo on a first start
  std::vector<policy::Policy> demo;      // the built-in demo policies
  std::chrono::milliseconds poll_interval{1'000};
};

// Opens and prepares the database (what it did is logged), then the cache over it. Errors name
// the database (its URL without password).
StatusOr<ServePolicies> open_serve_policies(const PolicyDatabase& database,
                                            const ServePoliciesOptions& options);

}  // namespace sluice::app
