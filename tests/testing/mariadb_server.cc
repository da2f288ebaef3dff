#include "testing/mariadb_server.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/core/percent_encoding.h"
#include "testing/redis_server.h"
#include "testing/subprocess.h"

namespace sluice::test {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(50);

bool is_identifier(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

// '...' SQL literal.
std::string sql_literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out.push_back(c == '\'' ? '\'' : '\\');
    out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

}  // namespace

StatusOr<std::unique_ptr<MariaDbServer>> MariaDbServer::start(MariaDbServerOptions options) {
  StatusOr<std::string> dir = make_temp_dir("sluice-mariadb-", "mysql");
  if (!dir.ok()) return dir.status();
  std::unique_ptr<MariaDbServer> server(new MariaDbServer(options, *dir));
  if (Status status = server->install(); !status.ok()) return status;
  const bool pick_port = options.port == 0;
  Status last;
  // A picked port can be taken before mariadbd binds it: try a few.
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
  if (StatusOr<std::string> created = server->execute(
          "CREATE USER '" + std::string(kUser) + "'@'%' IDENTIFIED BY " + sql_literal(kPassword));
      !created.ok()) {
    return created.status();
  }
  return server;
}

MariaDbServer::MariaDbServer(MariaDbServerOptions options, std::string dir)
    : ServerProcess("mariadbd", SIGTERM, std::move(dir)), options_(options) {}

Status MariaDbServer::install() {
  std::vector<std::string> argv = {"mariadb-install-db", "--datadir=" + dir_ + "/data",
                                   "--auth-root-authentication-method=normal", "--skip-test-db"};
  if (::geteuid() == 0) argv.insert(argv.begin() + 1, "--user=mysql");
  StatusOr<std::string> output = run_checked(argv);
  return output.ok() ? Status() : output.status();
}

Status MariaDbServer::launch() {
  std::error_code ignored;
  fs::remove(dir_ + "/pid", ignored);
  std::vector<std::string> argv = {"mariadbd",
                                   "--no-defaults",
                                   "--datadir=" + dir_ + "/data",
                                   "--socket=" + socket_path(),
                                   "--port=" + std::to_string(port_),
                                   "--bind-address=127.0.0.1",
                                   "--pid-file=" + dir_ + "/pid",
                                   "--log-error=" + dir_ + "/err.log",
                                   "--skip-log-bin",
                                   "--skip-name-resolve"};
  if (!options_.durable) {
    argv.push_back("--innodb-flush-log-at-trx-commit=2");
    argv.push_back("--innodb-doublewrite=0");
  }
  if (::geteuid() == 0) argv.insert(argv.begin() + 2, "--user=mysql");
  StatusOr<pid_t> pid = spawn_logged(argv, dir_ + "/launch.log");
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  return wait_until_answering();
}

Status MariaDbServer::wait_until_answering() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  for (;;) {
    StatusOr<CommandResult> ping =
        run_command({"mariadb-admin", "--no-defaults", "--socket=" + socket_path(), "-uroot",
                     "--connect-timeout=2", "ping"});
    if (ping.ok() && ping->exit_code == 0) return Status();
    if (process_gone(pid_)) {
      pid_ = 0;
      return internal_error("mariadbd on port " + std::to_string(port_) +
                            " exited during start-up:\n" + log_tail());
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return deadline_exceeded("mariadbd on port " + std::to_string(port_) + " did not answer:\n" +
                               log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

StatusOr<std::string> MariaDbServer::execute(std::string_view sql) {
  return run_checked({"mariadb", "--no-defaults", "--socket=" + socket_path(), "-uroot", "--batch",
                      "-e", std::string(sql)});
}

StatusOr<std::string> MariaDbServer::create_database(std::string_view name) {
  if (!is_identifier(name)) {
    return invalid_argument("database name must be 1-64 letters, digits or '_'");
  }
  const std::string db(name);
  StatusOr<std::string> done = execute(
      "CREATE DATABASE `" + db + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin; GRANT ALL ON `" +
      db + "`.* TO '" + std::string(kUser) + "'@'%';");
  if (!done.ok()) return done.status();
  return "mysql://" + std::string(kUser) + ":" + percent_encode(kPassword) + "@" + host() + ":" +
         std::to_string(port_) + "/" + db;
}

std::string MariaDbServer::log_tail() const {
  return tail(read_text_file(dir_ + "/launch.log"), 2048) +
         tail(read_text_file(dir_ + "/err.log"), 4096);
}

}  // namespace sluice::test
