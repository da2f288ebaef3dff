// Where `sluice serve` finds its policies and accounts: the SQL database of --policies (default:
// the per-user SQLite file the `policy` and `admin` commands use), prepared on start — policy
// files given with --policy-file imported into it (all or nothing), the demo policy on a first
// start, and a first admin with a one-time password when there is none — and a PolicyCache over
// it, so decisions never query the database and changes arrive within one poll interval.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sluice/auth/accounts.h"
#include "sluice/cli/environment.h"
#include "sluice/policy/policy.h"
#include "sluice/policy/policy_cache.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::cli {

struct ServePolicies {
  std::shared_ptr<policy::PolicyRepository> policies;
  std::shared_ptr<auth::AccountRepository> accounts;
  std::unique_ptr<policy::PolicyCache> cache;
};

struct ServePoliciesOptions {
  std::string url;                       // empty: env.default_policies_url
  std::vector<policy::Policy> imported;  // from --policy-file; none: the demo on a first start
  std::vector<policy::Policy> demo;      // the built-in demo policies
  std::chrono::milliseconds poll_interval{1'000};
  std::function<void(const nlohmann::json&)> log;  // one structured log line
};

StatusOr<ServePolicies> open_serve_policies(const Environment& env,
                                            const ServePoliciesOptions& options);

}  // namespace sluice::cli
