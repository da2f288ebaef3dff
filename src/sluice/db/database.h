// Database: the small layer between Sluice's SQL stores and SOCI — a pool of connections to one
// database chosen by URL (SQLite, MySQL/MariaDB or PostgreSQL), serialized write transactions
// over a revision counter, and the one place where SOCI's exceptions become Status values.
//
// Write transactions are serialized per counter: each starts by locking the counter's row in
// `revisions` (SQLite: BEGIN IMMEDIATE), so a select-then-insert/update inside it cannot race
// another writer, on any backend, with portable SQL only. Readers never block on writers
// (MVCC / WAL). Sessions run at READ COMMITTED (MySQL, PostgreSQL), so a statement after the
// lock sees every transaction committed before it.
//
// Error mapping: connection failures -> Unavailable (the connection is reopened on next use);
// deadlocks, lock timeouts, serialization failures, SQLite BUSY -> Aborted (retry the whole
// operation); unique-key violations -> AlreadyExists; invalid text for the column ->
// InvalidArgument; anything else -> Internal. Messages never contain the password.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/db/database_url.h"
#include "sluice/status.h"

namespace soci {
class session;
}

namespace sluice::db {

// The rows of the `revisions` table. Every write transaction locks one of them.
enum class Counter { kPolicies, kAccounts };

std::string_view counter_name(Counter counter);  // "policies", "accounts"

struct DatabaseOptions {
  // 0: the URL's `pool_size`, else 4. An in-memory SQLite database always has exactly one
  // connection (each connection would otherwise see its own empty database).
  std::size_t pool_size = 0;
  // How long an operation waits for a free pooled connection before failing with Unavailable.
  std::chrono::milliseconds lease_timeout{30'000};
  // How long a statement waits for a lock held by another transaction before failing with
  // Aborted (SQLite busy timeout, InnoDB lock wait timeout, PostgreSQL lock_timeout).
  std::chrono::milliseconds lock_timeout{10'000};
  // Reuse a live Database opened with the same URL (so policies and accounts opened separately
  // share one pool and, for sqlite::memory:, one database).
  bool share = true;
};

// The body of Database::write: a connection inside an open transaction that holds the lock of
// one counter, plus that counter's value.
class WriteTransaction {
 public:
  soci::session& sql() const { return sql_; }
  Dialect dialect() const { return dialect_; }
  // The counter as committed before this transaction plus the bumps made so far.
  std::int64_t revision() const { return revision_; }
  // Increments the counter (stored at commit) and returns the new value: a unique, increasing
  // id in commit order, used for history entries.
  std::int64_t next_revision() { return ++revision_; }

 private:
  friend class Database;
  WriteTransaction(soci::session& sql, Dialect dialect, std::int64_t revision)
      : sql_(sql), dialect_(dialect), revision_(revision) {}

  soci::session& sql_;
  Dialect dialect_;
  std::int64_t revision_;
};

class Database {
 public:
  // Parses `url` (InvalidArgument), connects (Unavailable) and applies pending migrations
  // (see migrations.h). With options.share, a Database already open for the same URL is
  // returned instead.
  static StatusOr<std::shared_ptr<Database>> open(std::string_view url,
                                                  const DatabaseOptions& options = {});

  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  Dialect dialect() const { return url_.dialect; }
  // The URL with its password masked.
  const std::string& display_url() const { return display_url_; }
  std::size_t pool_size() const { return slots_.size(); }

  // Runs `body` on a pooled connection in autocommit mode. `body` may throw SOCI's exceptions;
  // they become a Status whose message starts with `what` ("reading policy x: ...").
  Status run(std::string_view what, const std::function<Status(soci::session&)>& body);

  // Runs `body` in a transaction holding `counter`'s lock; commits when it returns OK (storing
  // the counter if it was bumped), rolls back on an error Status or an exception.
  Status write(std::string_view what, Counter counter,
               const std::function<Status(WriteTransaction&)>& body);

  // The committed value of `counter`. Cheap: one primary-key read.
  StatusOr<std::int64_t> counter_value(Counter counter);

  // SQL text fragments that differ between dialects.
  std::string_view begin_statement() const;  // BEGIN IMMEDIATE / START TRANSACTION / BEGIN

 private:
  struct Slot;
  class Lease;

  Database(DatabaseUrl url, std::string display_url, const DatabaseOptions& options);

  std::unique_ptr<soci::session> connect() const;
  StatusOr<std::unique_ptr<Lease>> lease(std::string_view what);
  void give_back(std::size_t slot, bool broken);
  Status to_status(std::string_view what, Lease& lease) const;

  const DatabaseUrl url_;
  const std::string display_url_;
  const DatabaseOptions options_;
  std::string connect_string_;

  Mutex mutex_;
  CondVar available_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::size_t> idle_ SLUICE_GUARDED_BY(mutex_);  // indexes into slots_
};

}  // namespace sluice::db
