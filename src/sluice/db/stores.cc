#include "sluice/db/stores.h"

#include <utility>

#include "sluice/db/sql_account_repository.h"
#include "sluice/db/sql_policy_repository.h"

namespace sluice::db {

StatusOr<SqlStores> open_sql_stores(std::string_view url, const Clock* clock,
                                    const DatabaseOptions& options) {
  StatusOr<std::shared_ptr<Database>> db = Database::open(url, options);
  if (!db.ok()) return db.status();
  SqlStores stores{.database = *db};
  stores.policies = make_sql_policy_repository(*db, clock);
  stores.accounts = make_sql_account_repository(*db, clock);
  return stores;
}

StatusOr<std::unique_ptr<policy::PolicyRepository>> open_policy_repository(std::string_view url,
                                                                           const Clock* clock) {
  StatusOr<std::shared_ptr<Database>> db = Database::open(url);
  if (!db.ok()) return db.status();
  return make_sql_policy_repository(std::move(*db), clock);
}

StatusOr<std::unique_ptr<auth::AccountRepository>> open_account_repository(std::string_view url,
                                                                           const Clock* clock) {
  StatusOr<std::shared_ptr<Database>> db = Database::open(url);
  if (!db.ok()) return db.status();
  return make_sql_account_repository(std::move(*db), clock);
}

}  // namespace sluice::db
