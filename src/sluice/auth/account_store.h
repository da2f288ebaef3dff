// Opening the account store: the SQL database (same URLs as the policy store, repository.h) that
// holds users, apps, roles and tokens. Opening the policies and the accounts with the same URL
// in one process shares one connection pool (and, for sqlite::memory:, one database).
#pragma once

#include <memory>
#include <string_view>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/status.h"

namespace sluice::auth {

// "sqlite:///var/lib/sluice.db" (or "sqlite::memory:"), "mysql://user:pass@host:port/db",
// "postgresql://user:pass@host:port/db". Applies pending migrations. InvalidArgument for a bad
// URL, Unavailable when the database cannot be reached. `clock` (default: the system clock)
// stamps created_at fields left 0 and must outlive the repository. Implemented in
// sluice_policy_sql (src/sluice/policy/sql/).
StatusOr<std::unique_ptr<AccountRepository>> open_account_repository(std::string_view url,
                                                                     const Clock* clock = nullptr);

}  // namespace sluice::auth
