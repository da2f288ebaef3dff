#include "sluice/db/database.h"

#include <fcntl.h>
#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <thread>
#include <utility>

#include "sluice/core/mutex.h"
#include "sluice/core/percent_encoding.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/migrations.h"

namespace sluice::db {
namespace {

constexpr std::size_t kDefaultPoolSize = 4;
constexpr int kConnectTimeoutSeconds = 10;

// Single-quoted value for SOCI-MySQL's key=value connection string: a backslash escapes the next
// character.
std::string quoted(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

std::string build_connect_string(const DatabaseUrl& url) {
  switch (url.dialect) {
    case Dialect::kSqlite:
      // SOCI's SQLite parser understands double quotes (paths with spaces); the URL parser
      // refuses paths containing '"'.
      return "db=\"" + url.path + "\"";
    case Dialect::kMysql: {
      std::string text = "host=" + quoted(url.host) + " port=" + std::to_string(url.port) +
                         " dbname=" + quoted(url.database) + " charset=utf8mb4" +
                         " connect_timeout=" + std::to_string(kConnectTimeoutSeconds);
      if (!url.user.empty()) text += " user=" + quoted(url.user);
      if (!url.password.empty()) text += " password=" + quoted(url.password);
      return text;
    }
    case Dialect::kPostgresql: {
      // libpq's URI form: SOCI 4.0.3 re-splits key=value strings on spaces, breaking quoted
      // values such as a password with a space; percent-encoded URIs have no spaces.
      std::string text = "postgresql://";
      if (!url.user.empty()) {
        text += percent_encode(url.user);
        if (!url.password.empty()) text += ":" + percent_encode(url.password);
        text += "@";
      }
      const bool ipv6 = url.host.find(':') != std::string::npos;
      text += (ipv6 ? "[" + url.host + "]" : url.host) + ":" + std::to_string(url.port) + "/" +
              percent_encode(url.database) +
              "?client_encoding=UTF8&application_name=sluice&connect_timeout=" +
              std::to_string(kConnectTimeoutSeconds);
      return text;
    }
  }
  return {};
}

struct Classified {
  StatusCode code = StatusCode::kInternal;
  bool connection_lost = false;
  std::string message;
};

Classified classify_mysql(const soci::mysql_soci_error& error) {
  Classified c{.message = error.get_error_message()};
  switch (error.err_num_) {
    case 1062:  // ER_DUP_ENTRY
    case 1586:  // ER_DUP_ENTRY_WITH_KEY_NAME
      c.code = StatusCode::kAlreadyExists;
      break;
    case 1205:  // ER_LOCK_WAIT_TIMEOUT
    case 1213:  // ER_LOCK_DEADLOCK
      c.code = StatusCode::kAborted;
      break;
    case 1366:  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD (e.g. invalid UTF-8)
    case 1406:  // ER_DATA_TOO_LONG
      c.code = StatusCode::kInvalidArgument;
      break;
    case 1040:  // ER_CON_COUNT_ERROR
    case 1044:  // ER_DBACCESS_DENIED_ERROR
    case 1045:  // ER_ACCESS_DENIED_ERROR
    case 1049:  // ER_BAD_DB_ERROR
      c.code = StatusCode::kUnavailable;
      break;
    case 1053:  // ER_SERVER_SHUTDOWN
    case 1927:  // ER_CONNECTION_KILLED
    case 2002:  // CR_CONNECTION_ERROR
    case 2003:  // CR_CONN_HOST_ERROR
    case 2006:  // CR_SERVER_GONE_ERROR
    case 2013:  // CR_SERVER_LOST
    case 2055:  // CR_SERVER_LOST_EXTENDED
      c.code = StatusCode::kUnavailable;
      c.connection_lost = true;
      break;
    default:
      if (error.get_error_category() == soci::soci_error::connection_error) {
        c.code = StatusCode::kUnavailable;
        c.connection_lost = true;
      }
      break;
  }
  return c;
}

Classified classify_postgresql(const soci::postgresql_soci_error& error) {
  Classified c{.message = error.get_error_message()};
  const std::string state = error.sqlstate();
  if (state == "23505") {  // unique_violation
    c.code = StatusCode::kAlreadyExists;
  } else if (state == "40001" || state == "40P01" || state == "55P03") {
    // serialization_failure, deadlock_detected, lock_not_available (lock_timeout)
    c.code = StatusCode::kAborted;
  } else if (state == "22021" || state == "22001" || state == "22P05") {
    // character_not_in_repertoire (invalid UTF-8), string_data_right_truncation,
    // untranslatable_character
    c.code = StatusCode::kInvalidArgument;
  } else if (state.starts_with("08") || state.starts_with("57P") ||
             error.get_error_category() == soci::soci_error::connection_error) {
    // connection_exception, admin/crash shutdown, cannot_connect_now
    c.code = StatusCode::kUnavailable;
    c.connection_lost = true;
  } else if (state == "53300") {  // too_many_connections
    c.code = StatusCode::kUnavailable;
  }
  return c;
}

Classified classify_sqlite(const soci::sqlite3_soci_error& error) {
  Classified c{.message = error.get_error_message()};
  switch (error.result() & 0xff) {
    case 5:  // SQLITE_BUSY
    case 6:  // SQLITE_LOCKED
      c.code = StatusCode::kAborted;
      break;
    case 19:  // SQLITE_CONSTRAINT (the schema's only constraints are keys and NOT NULL)
      c.code = StatusCode::kAlreadyExists;
      break;
    case 14:  // SQLITE_CANTOPEN
    case 10:  // SQLITE_IOERR
    case 13:  // SQLITE_FULL
    case 8:   // SQLITE_READONLY
      c.code = StatusCode::kUnavailable;
      break;
    case 11:  // SQLITE_CORRUPT
    case 26:  // SQLITE_NOTADB
      c.code = StatusCode::kDataLoss;
      break;
    default:
      break;
  }
  return c;
}

// Classifies the exception being handled. Call only inside a catch block.
Classified classify_current_exception() {
  try {
    throw;
  } catch (const soci::mysql_soci_error& error) {
    return classify_mysql(error);
  } catch (const soci::postgresql_soci_error& error) {
    return classify_postgresql(error);
  } catch (const soci::sqlite3_soci_error& error) {
    return classify_sqlite(error);
  } catch (const soci::soci_error& error) {
    Classified c{.message = error.get_error_message()};
    // Some SOCI versions report SQLite errors as plain soci_error.
    if (c.message.find("database is locked") != std::string::npos) {
      c.code = StatusCode::kAborted;
    } else if (c.message.find("UNIQUE constraint failed") != std::string::npos) {
      c.code = StatusCode::kAlreadyExists;
    } else if (error.get_error_category() == soci::soci_error::connection_error) {
      c.code = StatusCode::kUnavailable;
      c.connection_lost = true;
    }
    return c;
  } catch (const std::bad_alloc&) {
    return {.code = StatusCode::kResourceExhausted, .message = "out of memory"};
  } catch (const std::exception& error) {
    return {.message = error.what()};
  } catch (...) {
    return {.message = "unknown exception"};
  }
}

// Connections opened by open(share=true), by URL, so every store opened on one URL shares one
// pool (and one in-memory SQLite database).
std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, std::weak_ptr<Database>, std::less<>>& registry() {
  static auto* databases = new std::map<std::string, std::weak_ptr<Database>, std::less<>>();
  return *databases;
}

}  // namespace

std::string_view counter_name(Counter counter) {
  return counter == Counter::kAccounts ? "accounts" : "policies";
}

struct Database::Slot {
  std::unique_ptr<soci::session> session;  // null: (re)connect on next lease
};

class Database::Lease {
 public:
  Lease(Database& db, std::size_t slot, soci::session& sql) : db_(db), slot_(slot), sql_(sql) {}
  ~Lease() { db_.give_back(slot_, broken_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  soci::session& sql() { return sql_; }
  void mark_broken() { broken_ = true; }

 private:
  Database& db_;
  std::size_t slot_;
  soci::session& sql_;
  bool broken_ = false;
};

Database::Database(DatabaseUrl url, std::string display_url, const DatabaseOptions& options)
    : url_(std::move(url)), display_url_(std::move(display_url)), options_(options) {
  connect_string_ = build_connect_string(url_);
  std::size_t size =
      options.pool_size != 0 ? options.pool_size : url_.pool_size.value_or(kDefaultPoolSize);
  if (url_.dialect == Dialect::kSqlite && url_.path == kSqliteMemory) size = 1;
  for (std::size_t i = 0; i < size; ++i) {
    slots_.push_back(std::make_unique<Slot>());
    idle_.push_back(size - 1 - i);  // slot 0 is leased first
  }
}

Database::~Database() = default;

namespace {

// SQLite creates a missing database file with 0666 & ~umask — with the usual umask 022, readable
// by every local user, and it holds password hashes and token hashes. Creating it first, 0600,
// leaves SQLite an existing file; its -wal and -shm files take the database file's mode. An
// existing file keeps the mode its owner gave it.
Status create_private_database_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) {
    ::close(fd);
    return Status();
  }
  if (errno == EEXIST) return Status();
  return unavailable("creating the SQLite database " + path + ": " + std::strerror(errno));
}

// WAL: readers never block the writer nor the writer them. Switching a new database to WAL needs
// an exclusive lock, and when other connections opening the same file hold a shared one SQLite
// answers "database is locked" at once, without its busy handler (waiting could deadlock on the
// lock upgrade). The other opener finishes quickly: retry until the lock timeout.
void switch_to_wal(soci::session& sql, std::chrono::milliseconds lock_timeout) {
  const auto give_up = std::chrono::steady_clock::now() + lock_timeout;
  std::string mode;
  while (true) {
    try {
      sql << "PRAGMA journal_mode = WAL", soci::into(mode);
      return;
    } catch (const soci::sqlite3_soci_error& error) {
      const bool busy = (error.result() & 0xff) == 5;  // SQLITE_BUSY
      if (!busy || std::chrono::steady_clock::now() >= give_up) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

StatusOr<std::shared_ptr<Database>> Database::open(std::string_view url,
                                                   const DatabaseOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(DatabaseUrl parsed, parse_database_url(url));
  if (parsed.dialect == Dialect::kSqlite && parsed.path != kSqliteMemory) {
    SLUICE_RETURN_IF_ERROR(create_private_database_file(parsed.path));
  }

  std::unique_lock registry_lock(registry_mutex(), std::defer_lock);
  if (options.share) {
    registry_lock.lock();
    auto& databases = registry();
    for (auto it = databases.begin(); it != databases.end();) {
      it = it->second.expired() ? databases.erase(it) : std::next(it);
    }
    if (auto it = databases.find(url); it != databases.end()) {
      if (std::shared_ptr<Database> live = it->second.lock()) return live;
    }
  }

  std::shared_ptr<Database> db(new Database(std::move(parsed), redact_database_url(url), options));
  {
    // Connect eagerly so a wrong URL or a database that is down is reported by open().
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> first, db->lease("connecting"));
  }
  SLUICE_RETURN_IF_ERROR(apply_migrations(*db).status());
  if (options.share) registry()[std::string(url)] = db;
  return db;
}

std::unique_ptr<soci::session> Database::connect() const {
  auto session = std::make_unique<soci::session>();
  const long long lock_ms = options_.lock_timeout.count();
  switch (url_.dialect) {
    case Dialect::kSqlite: {
      session->open(*soci::factory_sqlite3(), connect_string_);
      soci::session& sql = *session;
      sql << "PRAGMA busy_timeout = " + std::to_string(lock_ms);
      if (url_.path != kSqliteMemory) switch_to_wal(sql, options_.lock_timeout);
      break;
    }
    case Dialect::kMysql: {
      session->open(*soci::factory_mysql(), connect_string_);
      soci::session& sql = *session;
      sql << "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
      // Strict: over-long or invalid text is an error, never silently truncated.
      sql << "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'";
      sql << "SET SESSION innodb_lock_wait_timeout = " +
                 std::to_string(std::max<long long>(1, (lock_ms + 999) / 1000));
      break;
    }
    case Dialect::kPostgresql: {
      session->open(*soci::factory_postgresql(), connect_string_);
      soci::session& sql = *session;
      sql << "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED";
      sql << "SET lock_timeout = " + std::to_string(lock_ms);
      // libpq prints NOTICEs ("relation already exists, skipping") to stderr otherwise.
      sql << "SET client_min_messages = warning";
      break;
    }
  }
  return session;
}

StatusOr<std::unique_ptr<Database::Lease>> Database::lease(std::string_view what) {
  std::size_t index = 0;
  {
    MutexLock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + options_.lease_timeout;
    while (idle_.empty() && available_.wait_until(lock, deadline)) {
    }
    if (idle_.empty()) {
      return unavailable(std::string(what) + ": no free connection to " + display_url_ +
                         " within " + std::to_string(options_.lease_timeout.count()) +
                         " ms (pool_size " + std::to_string(slots_.size()) + ")");
    }
    index = idle_.back();
    idle_.pop_back();
  }
  Slot& slot = *slots_[index];
  if (!slot.session) {
    try {
      slot.session = connect();
    } catch (...) {
      const Classified c = classify_current_exception();
      give_back(index, /*broken=*/true);
      return unavailable(std::string(what) + ": cannot connect to " + display_url_ + ": " +
                         c.message);
    }
  }
  return std::make_unique<Lease>(*this, index, *slot.session);
}

void Database::give_back(std::size_t index, bool broken) {
  if (broken) slots_[index]->session.reset();  // closed outside the lock
  {
    MutexLock lock(mutex_);
    idle_.push_back(index);
  }
  available_.notify_one();
}

Status Database::to_status(std::string_view what, Lease& lease) const {
  Classified c = classify_current_exception();
  if (c.code == StatusCode::kInternal && !lease.sql().is_connected()) {
    c.code = StatusCode::kUnavailable;
    c.connection_lost = true;
  }
  if (c.connection_lost) lease.mark_broken();
  // Trailing newlines from libpq's messages.
  while (!c.message.empty() && (c.message.back() == '\n' || c.message.back() == ' ')) {
    c.message.pop_back();
  }
  return Status(c.code, std::string(what) + ": " + c.message);
}

std::string_view Database::begin_statement() const {
  switch (url_.dialect) {
    case Dialect::kSqlite:
      // Take the write lock now: a deferred transaction that reads and then writes can fail
      // with BUSY at the write, without waiting, when another connection wrote in between.
      return "BEGIN IMMEDIATE";
    case Dialect::kMysql:
      return "START TRANSACTION";
    case Dialect::kPostgresql:
      return "BEGIN";
  }
  return "BEGIN";
}

Status Database::run(std::string_view what, const std::function<Status(soci::session&)>& body) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease, this->lease(what));
  try {
    return body(lease->sql());
  } catch (...) {
    return to_status(what, *lease);
  }
}

Status Database::write(std::string_view what, Counter counter,
                       const std::function<Status(WriteTransaction&)>& body) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Lease> lease, this->lease(what));
  soci::session& sql = lease->sql();
  const std::string name(counter_name(counter));
  bool in_transaction = false;
  try {
    sql << begin_statement();
    in_transaction = true;
    // Lock the counter's row first: every writer of this counter queues here, so the reads
    // below cannot go stale before commit. A no-op UPDATE locks on every backend.
    soci::statement lock =
        (sql.prepare << "UPDATE revisions SET revision = revision WHERE name = :name",
         soci::use(name));
    lock.execute(true);
    if (lock.get_affected_rows() != 1) {
      in_transaction = false;
      sql << "ROLLBACK";
      return internal_error(std::string(what) + ": the revisions row \"" + name + "\" is missing");
    }
    long long committed = 0;
    sql << "SELECT revision FROM revisions WHERE name = :name", soci::use(name),
        soci::into(committed);
    WriteTransaction tx(sql, dialect(), committed);
    Status status = body(tx);
    if (!status.ok()) {
      in_transaction = false;
      sql << "ROLLBACK";
      return status;
    }
    if (tx.revision() != committed) {
      long long revision = tx.revision();
      sql << "UPDATE revisions SET revision = :revision WHERE name = :name", soci::use(revision),
          soci::use(name);
    }
    in_transaction = false;  // a failed COMMIT has ended the transaction (or the connection)
    sql << "COMMIT";
    return Status();
  } catch (...) {
    Status status = to_status(what, *lease);
    if (in_transaction) {
      try {
        sql << "ROLLBACK";
      } catch (...) {
        lease->mark_broken();  // state unknown: start afresh
      }
    }
    return status;
  }
}

StatusOr<std::int64_t> Database::counter_value(Counter counter) {
  long long value = 0;
  const std::string name(counter_name(counter));
  SLUICE_RETURN_IF_ERROR(run("reading the revision", [&](soci::session& sql) -> Status {
    soci::indicator found = soci::i_null;
    sql << "SELECT revision FROM revisions WHERE name = :name", soci::use(name),
        soci::into(value, found);
    if (found != soci::i_ok) return internal_error("the revisions row \"" + name + "\" is missing");
    return Status();
  }));
  return static_cast<std::int64_t>(value);
}

}  // namespace sluice::db
