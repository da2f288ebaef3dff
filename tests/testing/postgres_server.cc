#include "testing/postgres_server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>
#include <vector>

#include "sluice/core/percent_encoding.h"
#include "testing/redis_server.h"
#include "testing/subprocess.h"

namespace sluice::test {
namespace {

namespace fs = std::filesystem;

bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

std::string sql_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out.push_back('\'');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

// The bin directory of the newest installed PostgreSQL.
std::string find_bin_dir() {
  std::string best;
  int best_version = -1;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", error)) {
    const std::string name = entry.path().filename().string();
    const int version = std::atoi(name.c_str());
    if (version > best_version && fs::exists(entry.path() / "bin" / "initdb")) {
      best_version = version;
      best = (entry.path() / "bin").string();
    }
  }
  return best;
}

}  // namespace

StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::start(PostgresServerOptions options) {
  if (options.bin_dir.empty()) options.bin_dir = find_bin_dir();
  if (options.bin_dir.empty()) {
    return internal_error(
        "no PostgreSQL server under /usr/lib/postgresql (apt install postgresql)");
  }
  StatusOr<std::string> dir = make_temp_dir("sluice-postgres-", "postgres");
  if (!dir.ok()) return dir.status();
  std::unique_ptr<PostgresServer> server(new PostgresServer(options, *dir));
  StatusOr<std::string> initialized =
      server->run_as_postgres(shell_quote(options.bin_dir + "/initdb") + " -D " +
                              shell_quote(*dir + "/data") + " -A trust -U postgres -E UTF8");
  if (!initialized.ok()) return initialized.status();

  const bool pick_port = options.port == 0;
  Status last;
  for (int attempt = 0; attempt < (pick_port ? 5 : 1); ++attempt) {
    if (pick_port) {
      StatusOr<std::uint16_t> port = RedisServer::pick_free_port();
      if (!port.ok()) return port.status();
      server->port_ = *port;
    } else {
      server->port_ = options.port;
    }
    last = server->launch();
    if (last.ok()) break;
  }
  if (!last.ok()) return last;
  if (StatusOr<std::string> created =
          server->execute("CREATE ROLE " + std::string(kUser) + " LOGIN CREATEDB PASSWORD " +
                          sql_literal(kPassword));
      !created.ok()) {
    return created.status();
  }
  return server;
}

PostgresServer::PostgresServer(PostgresServerOptions options, std::string dir)
    : ServerProcess("postgres", SIGINT, std::move(dir)), options_(std::move(options)) {}

StatusOr<std::string> PostgresServer::run_as_postgres(const std::string& command) {
  if (::geteuid() == 0) return run_checked({"su", "postgres", "-c", command});
  return run_checked({"sh", "-c", command});
}

Status PostgresServer::launch() {
  std::string server_options =
      "-p " + std::to_string(port_) + " -k " + dir_ + " -c listen_addresses=127.0.0.1";
  if (!options_.durable) {
    server_options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";
  }
  StatusOr<std::string> started = run_as_postgres(
      shell_quote(options_.bin_dir + "/pg_ctl") + " -D " + shell_quote(dir_ + "/data") + " -o " +
      shell_quote(server_options) + " -l " + shell_quote(dir_ + "/log") + " -w -t " +
      std::to_string((options_.start_timeout_ms + 999) / 1000) + " start");
  if (!started.ok()) {
    return internal_error(started.status().message() + "\n" + log_tail());
  }
  // The postmaster's PID is the first line of postmaster.pid.
  const std::string pidfile = read_text_file(dir_ + "/data/postmaster.pid");
  const long pid = std::strtol(pidfile.c_str(), nullptr, 10);
  if (pid <= 0) return internal_error("postgres started but wrote no postmaster.pid");
  pid_ = static_cast<pid_t>(pid);
  return Status();
}

StatusOr<std::string> PostgresServer::execute(std::string_view sql, std::string_view database) {
  return run_checked({"psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", host(), "-p",
                      std::to_string(port_), "-U", "postgres", "-d", std::string(database), "-c",
                      std::string(sql)});
}

StatusOr<std::string> PostgresServer::create_database(std::string_view name) {
  if (!is_identifier(name)) {
    return invalid_argument("database name must be 1-63 letters, digits or '_'");
  }
  const std::string db(name);
  StatusOr<std::string> done = execute("CREATE DATABASE \"" + db + "\" OWNER " +
                                       std::string(kUser) + " ENCODING 'UTF8' TEMPLATE template0");
  if (!done.ok()) return done.status();
  return "postgresql://" + std::string(kUser) + ":" + percent_encode(kPassword) + "@" + host() +
         ":" + std::to_string(port_) + "/" + db;
}

std::string PostgresServer::log_tail() const { return tail(read_text_file(dir_ + "/log"), 4096); }

}  // namespace sluice::test
