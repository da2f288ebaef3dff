// SqlAccountRepository: auth::AccountRepository (auth/accounts.h) over a Database (database.h),
// in the same database as the policies. Changes run in write transactions holding the `accounts`
// counter's lock, so checks such as "the app exists" cannot race the change they guard.
#pragma once

#include <memory>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/db/database.h"

namespace sluice::db {

// `clock` (default: the system clock) stamps created_at when the caller leaves it 0; it must
// outlive the repository.
std::unique_ptr<auth::AccountRepository> make_sql_account_repository(std::shared_ptr<Database> db,
                                                                     const Clock* clock = nullptr);

}  // namespace sluice::db
