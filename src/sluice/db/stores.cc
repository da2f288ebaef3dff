#include "sluice/db/stores.h"

#include <utility>

#include "sluice/core/status_macros.h"
#include "sluice/db/sql_account_repository.h"
#include "sluice/db/sql_policy_repository.h"

namespace sluice::db {

StatusOr<SqlStores> open_sql_stores(std::string_view url, const Clock* clock,
                                    const DatabaseOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Database> db, Database::open(url, options));
  SqlStores stores{.database = db};
  stores.policies = make_sql_policy_repository(db, clock);
  stores.accounts = make_sql_account_repository(db, clock);
  return stores;
}

StatusOr<std::unique_ptr<policy::PolicyRepository>> open_policy_repository(std::string_view url,
                                                                           const Clock* clock) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Database> db, Database::open(url));
  return make_sql_policy_repository(std::move(db), clock);
}

StatusOr<std::unique_ptr<auth::AccountRepository>> open_account_repository(std::string_view url,
                                                                           const Clock* clock) {
  SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<Database> db, Database::open(url));
  return make_sql_account_repository(std::move(db), clock);
}

}  // namespace sluice::db
