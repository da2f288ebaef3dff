// PostgresServer: a real PostgreSQL server for integration tests, on a free loopback port in its
// own temporary directory, started (initdb and pg_ctl as user postgres, which PostgreSQL requires
// when we are root) and stopped by PID — never by name, the machine is shared.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/status.h"
#include "testing/server_process.h"

namespace sluice::test {

struct PostgresServerOptions {
  // 0: pick a free loopback port.
  std::uint16_t port = 0;
  // Directory holding initdb, pg_ctl and postgres; empty: the newest /usr/lib/postgresql/*/bin.
  std::string bin_dir;
  // Milliseconds pg_ctl waits for the server to accept connections.
  int start_timeout_ms = 60'000;
  // false: fsync, synchronous_commit and full_page_writes off — tests need no crash safety, and
  // fsyncs on a shared disk make CREATE DATABASE and shutdown checkpoints take seconds.
  bool durable = false;
};

class PostgresServer final : public ServerProcess {
 public:
  // initdb (trust authentication, UTF-8), then pg_ctl start; returns once it accepts
  // connections. Errors carry the tail of the server's log.
  static StatusOr<std::unique_ptr<PostgresServer>> start(PostgresServerOptions options = {});

  // The role create_database makes the owner. The password has a space, a quote and URL
  // delimiters (trust authentication accepts any password, but the URL must still parse).
  static constexpr std::string_view kUser = "sluice";
  static constexpr std::string_view kPassword = "pa ss'@:/w";

  // Creates database `name` ([A-Za-z0-9_]+, UTF-8) owned by kUser and returns
  // "postgresql://sluice:<password>@127.0.0.1:<port>/<name>".
  StatusOr<std::string> create_database(std::string_view name);

  // Runs SQL as the superuser with psql; returns psql's output.
  StatusOr<std::string> execute(std::string_view sql, std::string_view database = "postgres");

  // stop() sends SIGINT, a fast shutdown; after kill_hard() recovery runs on restart, once the
  // orphaned backends have exited (ServerProcess).

 private:
  PostgresServer(PostgresServerOptions options, std::string dir);

  Status launch() override;
  // `command` run as user postgres (via su when we are root).
  StatusOr<std::string> run_as_postgres(const std::string& command);
  std::string log_tail() const;

  PostgresServerOptions options_;
};

}  // namespace sluice::test
