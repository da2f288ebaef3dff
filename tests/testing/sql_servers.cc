#include "testing/sql_servers.h"

#include <filesystem>
#include <utility>

#include "testing/subprocess.h"

namespace sluice::test {
namespace {

// The server in `server`, started on first use; a failed start is remembered in `error`.
template <typename Server>
StatusOr<Server*> started(std::unique_ptr<Server>& server, Status& error) {
  if (!server && error.ok()) {
    StatusOr<std::unique_ptr<Server>> start = Server::start();
    if (start.ok()) {
      server = std::move(*start);
    } else {
      error = start.status();
    }
  }
  if (!server) return error;
  return server.get();
}

}  // namespace

std::string sql_backend_name(SqlBackend backend) {
  switch (backend) {
    case SqlBackend::kSqliteMemory:
      return "SqliteMemory";
    case SqlBackend::kSqliteFile:
      return "SqliteFile";
    case SqlBackend::kMariaDb:
      return "MariaDb";
    case SqlBackend::kPostgresql:
      return "Postgresql";
  }
  return "?";
}

bool is_sql_server(SqlBackend backend) {
  return backend == SqlBackend::kMariaDb || backend == SqlBackend::kPostgresql;
}

SqlServers& SqlServers::get() {
  static SqlServers* servers = [] {
    auto* created = new SqlServers;
    ::testing::AddGlobalTestEnvironment(created);  // owned by GoogleTest
    return created;
  }();
  return *servers;
}

void SqlServers::TearDown() {
  std::lock_guard lock(mutex_);
  mariadb_.reset();
  postgres_.reset();
  if (!sqlite_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(sqlite_dir_, ignored);
  }
}

StatusOr<std::string> SqlServers::fresh_url(SqlBackend backend) {
  std::lock_guard lock(mutex_);
  const std::string name = "sluice_t" + std::to_string(++counter_);
  switch (backend) {
    case SqlBackend::kSqliteMemory:
      return std::string("sqlite::memory:");
    case SqlBackend::kSqliteFile:
      if (sqlite_dir_.empty()) {
        StatusOr<std::string> dir = make_temp_dir("sluice-sqlite-");
        if (!dir.ok()) return dir.status();
        sqlite_dir_ = *dir;
      }
      return "sqlite://" + sqlite_dir_ + "/" + name + ".db";
    case SqlBackend::kMariaDb: {
      StatusOr<MariaDbServer*> server = started(mariadb_, mariadb_error_);
      if (!server.ok()) return server.status();
      return (*server)->create_database(name);
    }
    case SqlBackend::kPostgresql: {
      StatusOr<PostgresServer*> server = started(postgres_, postgres_error_);
      if (!server.ok()) return server.status();
      return (*server)->create_database(name);
    }
  }
  return internal_error("unknown backend");
}

Status SqlServers::stop(SqlBackend backend) {
  std::lock_guard lock(mutex_);
  if (backend == SqlBackend::kMariaDb) return mariadb_->stop();
  return postgres_->stop();
}

Status SqlServers::restart(SqlBackend backend) {
  std::lock_guard lock(mutex_);
  if (backend == SqlBackend::kMariaDb) return mariadb_->restart();
  return postgres_->restart();
}

}  // namespace sluice::test
