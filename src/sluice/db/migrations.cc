#include "sluice/db/migrations.h"

#include <soci/soci.h>

#include <string>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/database.h"

namespace sluice::db {
namespace {

// An arbitrary constant naming the PostgreSQL advisory lock that serializes migrations.
constexpr long long kPostgresMigrationLock = 0x5111CE;
constexpr std::string_view kMysqlMigrationLock = "sluice.schema_migrations";
constexpr int kMysqlLockWaitSeconds = 60;

// Column types and table options that differ between dialects; everything else is portable.
struct Types {
  std::string text;           // unbounded text (MySQL's TEXT stops at 64 KiB)
  std::string table_options;  // MySQL: InnoDB, utf8mb4 and a binary (case-sensitive) collation
};

Types types(Dialect dialect) {
  if (dialect == Dialect::kMysql) {
    return {.text = "LONGTEXT",
            .table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"};
  }
  return {.text = "TEXT", .table_options = ""};
}

// CREATE INDEX IF NOT EXISTS exists in SQLite, PostgreSQL and MariaDB, not in MySQL 8; MySQL
// gets its indexes inline in CREATE TABLE instead.
void create_index(soci::session& sql, Dialect dialect, const std::string& name,
                  const std::string& table, const std::string& columns) {
  if (dialect == Dialect::kMysql) return;
  sql << "CREATE INDEX IF NOT EXISTS " + name + " ON " + table + " (" + columns + ")";
}

std::string inline_index(Dialect dialect, const std::string& name, const std::string& columns) {
  return dialect == Dialect::kMysql ? ",\n  INDEX " + name + " (" + columns + ")" : "";
}

void initial_schema(soci::session& sql, Dialect dialect) {
  const Types t = types(dialect);
  // One row per counter; every write transaction locks its counter's row first.
  sql << "CREATE TABLE IF NOT EXISTS revisions (\n"
         "  name VARCHAR(64) NOT NULL PRIMARY KEY,\n"
         "  revision BIGINT NOT NULL\n"
         ")" +
             t.table_options;
  for (std::string name : {"policies", "accounts"}) {
    long long rows = 0;
    sql << "SELECT COUNT(*) FROM revisions WHERE name = :name", soci::use(name), soci::into(rows);
    if (rows == 0) {
      sql << "INSERT INTO revisions (name, revision) VALUES (:name, 0)", soci::use(name);
    }
  }

  // `document` is policy_to_json() of the stored policy; the audit columns are authoritative.
  sql << "CREATE TABLE IF NOT EXISTS policies (\n"
         "  name VARCHAR(128) NOT NULL PRIMARY KEY,\n"
         "  document " +
             t.text +
             " NOT NULL,\n"
             "  version BIGINT NOT NULL,\n"
             "  created_by VARCHAR(255) NOT NULL,\n"
             "  updated_by VARCHAR(255) NOT NULL,\n"
             "  created_at BIGINT NOT NULL,\n"
             "  updated_at BIGINT NOT NULL\n"
             ")" +
             t.table_options;

  // `id` is the policies revision the change produced: unique and increasing in commit order.
  sql << "CREATE TABLE IF NOT EXISTS policy_history (\n"
         "  id BIGINT NOT NULL PRIMARY KEY,\n"
         "  policy VARCHAR(128) NOT NULL,\n"
         "  action VARCHAR(16) NOT NULL,\n"
         "  actor VARCHAR(255) NOT NULL,\n"
         "  changed_at BIGINT NOT NULL,\n"
         "  version BIGINT NOT NULL,\n"
         "  old_document " +
             t.text +
             ",\n"
             "  new_document " +
             t.text + inline_index(dialect, "policy_history_by_policy", "policy, id") +
             "\n"
             ")" +
             t.table_options;
  create_index(sql, dialect, "policy_history_by_policy", "policy_history", "policy, id");

  sql << "CREATE TABLE IF NOT EXISTS users (\n"
         "  name VARCHAR(255) NOT NULL PRIMARY KEY,\n"
         "  password_hash " +
             t.text +
             " NOT NULL,\n"
             "  is_admin INTEGER NOT NULL,\n"
             "  created_at BIGINT NOT NULL\n"
             ")" +
             t.table_options;

  sql << "CREATE TABLE IF NOT EXISTS apps (\n"
         "  name VARCHAR(128) NOT NULL PRIMARY KEY,\n"
         "  description " +
             t.text +
             " NOT NULL,\n"
             "  created_at BIGINT NOT NULL\n"
             ")" +
             t.table_options;

  sql << "CREATE TABLE IF NOT EXISTS app_roles (\n"
         "  user_name VARCHAR(255) NOT NULL,\n"
         "  app VARCHAR(128) NOT NULL,\n"
         "  role VARCHAR(16) NOT NULL,\n"
         "  PRIMARY KEY (user_name, app)" +
             inline_index(dialect, "app_roles_by_app", "app") +
             "\n"
             ")" +
             t.table_options;
  create_index(sql, dialect, "app_roles_by_app", "app_roles", "app");

  sql << "CREATE TABLE IF NOT EXISTS tokens (\n"
         "  id VARCHAR(255) NOT NULL PRIMARY KEY,\n"
         "  user_name VARCHAR(255) NOT NULL,\n"
         "  description " +
             t.text +
             " NOT NULL,\n"
             "  secret_hash VARCHAR(128) NOT NULL,\n"
             "  created_at BIGINT NOT NULL" +
             inline_index(dialect, "tokens_by_user", "user_name") +
             "\n"
             ")" +
             t.table_options;
  create_index(sql, dialect, "tokens_by_user", "tokens", "user_name");
}

bool column_exists(soci::session& sql, Dialect dialect, const std::string& table,
                   const std::string& column) {
  long long rows = 0;
  switch (dialect) {
    case Dialect::kSqlite:
      sql << "SELECT COUNT(*) FROM pragma_table_info(:table) WHERE name = :column",
          soci::use(table), soci::use(column), soci::into(rows);
      break;
    case Dialect::kMysql:
      sql << "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = DATABASE() "
             "AND table_name = :table AND column_name = :column",
          soci::use(table), soci::use(column), soci::into(rows);
      break;
    case Dialect::kPostgresql:
      sql << "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = "
             "current_schema() AND table_name = :table AND column_name = :column",
          soci::use(table), soci::use(column), soci::into(rows);
      break;
  }
  return rows > 0;
}

// users.generation (auth::User::generation): login sessions record it, so a password or role
// change, or a deleted user re-created under the same name, voids the sessions of before on
// every server. Rows of before start at 0; every later change sets it from the accounts revision
// counter, which never repeats. Checked first because MySQL commits the ALTER at once: a
// migration interrupted after it must be re-runnable.
void add_user_generation(soci::session& sql, Dialect dialect) {
  if (column_exists(sql, dialect, "users", "generation")) return;
  sql << "ALTER TABLE users ADD COLUMN generation BIGINT NOT NULL DEFAULT 0";
}

// tokens.expires_at (auth::TokenRecord::expires_at): NULL for tokens that never expire, which
// every token of before is. Re-runnable for the same reason as add_user_generation.
void add_token_expiry(soci::session& sql, Dialect dialect) {
  if (column_exists(sql, dialect, "tokens", "expires_at")) return;
  sql << "ALTER TABLE tokens ADD COLUMN expires_at BIGINT NULL";
}

const std::vector<Migration>& all_migrations() {
  static const auto* list = new std::vector<Migration>{
      {.version = 1, .name = "policies, history, revisions and accounts", .apply = initial_schema},
      {.version = 2, .name = "users.generation", .apply = add_user_generation},
      {.version = 3, .name = "tokens.expires_at", .apply = add_token_expiry},
  };
  return *list;
}

long long current_version(soci::session& sql) {
  long long version = 0;
  soci::indicator present = soci::i_null;
  sql << "SELECT MAX(version) FROM schema_migrations", soci::into(version, present);
  return present == soci::i_ok ? version : 0;
}

void create_migrations_table(soci::session& sql, Dialect dialect) {
  sql << "CREATE TABLE IF NOT EXISTS schema_migrations (\n"
         "  version BIGINT NOT NULL PRIMARY KEY,\n"
         "  name VARCHAR(255) NOT NULL,\n"
         "  applied_at BIGINT NOT NULL\n"
         ")" +
             types(dialect).table_options;
}

}  // namespace

std::span<const Migration> schema_migrations() { return all_migrations(); }

StatusOr<int> apply_migrations(Database& db, std::span<const Migration> migrations) {
  for (std::size_t i = 0; i < migrations.size(); ++i) {
    if (migrations[i].version <= 0 ||
        (i > 0 && migrations[i].version <= migrations[i - 1].version)) {
      return internal_error("migration versions must be positive and increasing");
    }
  }
  const Dialect dialect = db.dialect();
  int applied = 0;
  SLUICE_RETURN_IF_ERROR(db.run("applying schema migrations", [&](soci::session& sql) -> Status {
    // MySQL: a session-level named lock (its DDL commits implicitly, so a transaction cannot
    // hold it). SQLite/PostgreSQL: one transaction around everything.
    bool locked = false;
    bool in_transaction = false;
    auto release = [&] {
      if (in_transaction) {
        in_transaction = false;
        sql << "ROLLBACK";
      }
      if (locked) {
        locked = false;
        int ignored = 0;
        soci::indicator ind = soci::i_ok;
        sql << "SELECT RELEASE_LOCK('" + std::string(kMysqlMigrationLock) + "')",
            soci::into(ignored, ind);
      }
    };
    try {
      if (dialect == Dialect::kMysql) {
        int got = 0;
        soci::indicator ind = soci::i_null;
        sql << "SELECT GET_LOCK('" + std::string(kMysqlMigrationLock) + "', " +
                   std::to_string(kMysqlLockWaitSeconds) + ")",
            soci::into(got, ind);
        if (ind != soci::i_ok || got != 1) {
          return Status(StatusCode::kAborted,
                        "timed out waiting for another process to finish migrating the schema");
        }
        locked = true;
      } else {
        sql << db.begin_statement();
        in_transaction = true;
        if (dialect == Dialect::kPostgresql) {
          sql << "SELECT pg_advisory_xact_lock(" + std::to_string(kPostgresMigrationLock) + ")";
        }
      }
      create_migrations_table(sql, dialect);
      const long long current = current_version(sql);
      const std::int64_t latest = migrations.empty() ? 0 : migrations.back().version;
      if (current > latest) {
        release();
        return Status(StatusCode::kFailedPrecondition,
                      "the database schema is at version " + std::to_string(current) +
                          ", newer than this Sluice knows (" + std::to_string(latest) +
                          "): upgrade Sluice");
      }
      const Micros now = SystemClock::instance().now();
      for (const Migration& migration : migrations) {
        if (migration.version <= current) continue;
        migration.apply(sql, dialect);
        long long version = migration.version;
        std::string name(migration.name);
        long long applied_at = now;
        sql << "INSERT INTO schema_migrations (version, name, applied_at) "
               "VALUES (:version, :name, :applied_at)",
            soci::use(version), soci::use(name), soci::use(applied_at);
        ++applied;
      }
      if (in_transaction) {
        in_transaction = false;
        sql << "COMMIT";
      }
      release();
      return Status();
    } catch (...) {
      try {
        release();
      } catch (...) {
        // The connection is reported broken by the caller's classification if it is.
      }
      throw;
    }
  }));
  return applied;
}

StatusOr<std::int64_t> schema_version(Database& db) {
  long long version = 0;
  SLUICE_RETURN_IF_ERROR(db.run("reading the schema version", [&](soci::session& sql) -> Status {
    version = current_version(sql);
    return Status();
  }));
  return static_cast<std::int64_t>(version);
}

}  // namespace sluice::db
