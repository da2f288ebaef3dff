// Schema migrations: the SQL schema of the policy and account stores, as an ordered list of
// versioned steps recorded in `schema_migrations (version, name, applied_at)`. Database::open
// applies the pending ones; applying is idempotent and safe when several processes open the same
// database at once (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory lock and transactional DDL;
// MySQL/MariaDB: GET_LOCK — MySQL commits DDL implicitly, so every step is written to be
// re-runnable: CREATE ... IF NOT EXISTS, rows inserted only when missing).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "sluice/db/database_url.h"
#include "sluice/status.h"

namespace soci {
class session;
}

namespace sluice::db {

class Database;

struct Migration {
  std::int64_t version;  // > 0, increasing along the list
  std::string_view name;
  // Runs inside the migration transaction; may throw SOCI's exceptions.
  std::function<void(soci::session&, Dialect)> apply;
};

// The schema of this build, oldest first.
std::span<const Migration> schema_migrations();

// Applies the steps of `migrations` newer than the database's version, in order; returns how
// many were applied. FailedPrecondition when the database already has a version newer than the
// last step (written by a newer Sluice).
StatusOr<int> apply_migrations(Database& db, std::span<const Migration> migrations);
inline StatusOr<int> apply_migrations(Database& db) {
  return apply_migrations(db, schema_migrations());
}

// The highest applied version; 0 for an empty database.
StatusOr<std::int64_t> schema_version(Database& db);

}  // namespace sluice::db
