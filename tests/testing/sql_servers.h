// SqlServers: the SQL backends for tests that run against every one — SQLite in memory and in a
// file, a real MariaDB and a real PostgreSQL. The servers start on first use, once per test
// binary, on free loopback ports, and stop (by PID) after the last test; a server that failed
// to start is not retried. Each fresh_url is a database nobody has used yet.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>

#include "sluice/status.h"
#include "testing/mariadb_server.h"
#include "testing/postgres_server.h"

namespace sluice::test {

enum class SqlBackend { kSqliteMemory, kSqliteFile, kMariaDb, kPostgresql };

// "SqliteMemory", "SqliteFile", "MariaDb", "Postgresql": test name suffixes.
std::string sql_backend_name(SqlBackend backend);
// True for the backends that are servers (which can be stopped and restarted).
bool is_sql_server(SqlBackend backend);

class SqlServers : public ::testing::Environment {
 public:
  // The one instance, registered with GoogleTest (which owns it and tears it down after the last
  // test). Call it during static initialization so that holds for every test.
  static SqlServers& get();

  void TearDown() override;

  // The URL of a database nobody has used yet (SQLite in memory: "sqlite::memory:").
  StatusOr<std::string> fresh_url(SqlBackend backend);

  // Stops the backend's server, or starts it again on the same port and data.
  Status stop(SqlBackend backend);
  Status restart(SqlBackend backend);

 private:
  SqlServers() = default;

  std::mutex mutex_;
  int counter_ = 0;
  std::string sqlite_dir_;
  std::unique_ptr<MariaDbServer> mariadb_;
  Status mariadb_error_;
  std::unique_ptr<PostgresServer> postgres_;
  Status postgres_error_;
};

}  // namespace sluice::test
