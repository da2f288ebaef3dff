#include "sluice/policy/sql/stores.h"

#include <utility>

#include "sluice/auth/account_store.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/sql/sql_account_repository.h"
#include "sluice/policy/sql/sql_policy_repository.h"

namespace sluice::policy::sql {

StatusOr<SqlStores> open_sql_stores(std::string_view url, const Clock* clock,
                                    const DatabaseOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Database> db, Database::open(url, options));
  SqlStores stores{.database = db};
  stores.policies = make_sql_policy_repository(db, clock);
  stores.accounts = make_sql_account_repository(db, clock);
  return stores;
}

}  // namespace sluice::policy::sql

namespace sluice::policy {

StatusOr<std::unique_ptr<PolicyRepository>> open_policy_repository(std::string_view url,
                                                                   const Clock* clock) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<sql::Database> db, sql::Database::open(url));
  return sql::make_sql_policy_repository(std::move(db), clock);
}

}  // namespace sluice::policy

namespace sluice::auth {

StatusOr<std::unique_ptr<AccountRepository>> open_account_repository(std::string_view url,
                                                                     const Clock* clock) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<policy::sql::Database> db,
                          policy::sql::Database::open(url));
  return policy::sql::make_sql_account_repository(std::move(db), clock);
}

}  // namespace sluice::auth
