// Opening the SQL stores: the policy repository (policy/repository.h) and the account repository
// (auth/accounts.h) over one Database — one connection pool, one schema, one set of migrations.
// The policy model and the accounts know nothing of SQL: this module implements their
// repository interfaces, and whoever wires the process (cli/, client/) opens them here.
#pragma once

#include <memory>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/db/database.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::db {

struct SqlStores {
  std::shared_ptr<Database> database;
  std::shared_ptr<policy::PolicyRepository> policies;
  std::shared_ptr<auth::AccountRepository> accounts;
};

// Opens (or, with options.share, joins) the database at `url` and returns both repositories.
// Errors as open_policy_repository. `clock` must outlive the stores.
StatusOr<SqlStores> open_sql_stores(std::string_view url, const Clock* clock = nullptr,
                                    const DatabaseOptions& options = {});

// One repository alone. `url`: "sqlite:///var/lib/sluice.db" (or "sqlite::memory:"),
// "mysql://user:pass@host:port/db", "postgresql://user:pass@host:port/db". Applies pending
// migrations. InvalidArgument for a bad URL, Unavailable when the database cannot be reached.
// `clock` (default: the system clock) stamps created_at fields left 0 and must outlive the
// repository. Opening the policies and the accounts with the same URL in one process shares one
// connection pool (and, for sqlite::memory:, one database).
StatusOr<std::unique_ptr<policy::PolicyRepository>> open_policy_repository(
    std::string_view url, const Clock* clock = nullptr);
StatusOr<std::unique_ptr<auth::AccountRepository>> open_account_repository(
    std::string_view url, const Clock* clock = nullptr);

}  // namespace sluice::db
