// Opening the SQL stores: the policy repository (policy/repository.h) and the account repository
// (auth/account_store.h) over one Database — one connection pool, one schema, one set of
// migrations. `open_policy_repository` and `open_account_repository` are defined here too.
#pragma once

#include <memory>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/policy/repository.h"
#include "sluice/policy/sql/database.h"
#include "sluice/status.h"

namespace sluice::policy::sql {

struct SqlStores {
  std::shared_ptr<Database> database;
  std::shared_ptr<PolicyRepository> policies;
  std::shared_ptr<auth::AccountRepository> accounts;
};

// Opens (or, with options.share, joins) the database at `url` and returns both repositories.
// Errors as open_policy_repository. `clock` must outlive the stores.
StatusOr<SqlStores> open_sql_stores(std::string_view url, const Clock* clock = nullptr,
                                    const DatabaseOptions& options = {});

}  // namespace sluice::policy::sql
