// MariaDbServer: a real MariaDB server (mariadbd) for integration tests, on a free loopback port
// in its own temporary directory, started (mariadb-install-db, then mariadbd as user mysql) and
// stopped by PID — never by name, the machine is shared.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/status.h"
#include "testing/server_process.h"

namespace sluice::test {

struct MariaDbServerOptions {
  // 0: pick a free loopback port.
  std::uint16_t port = 0;
  // Milliseconds to wait for the server to answer a ping after launch.
  int start_timeout_ms = 60'000;
  // false: InnoDB flushes its log about once a second instead of at every commit and skips the
  // doublewrite buffer — tests need no crash safety, and fsyncs on a shared disk are slow.
  bool durable = false;
};

class MariaDbServer final : public ServerProcess {
 public:
  // Initializes a data directory and launches mariadbd; returns once it answers. Errors carry
  // the tail of the server's log.
  static StatusOr<std::unique_ptr<MariaDbServer>> start(MariaDbServerOptions options = {});

  // The account create_database grants access to. The password has a space, a quote and URL
  // delimiters, so every URL built from it exercises percent-decoding and quoting.
  static constexpr std::string_view kUser = "sluice";
  static constexpr std::string_view kPassword = "pa ss'@:/w";

  // Creates database `name` ([A-Za-z0-9_]+; utf8mb4, binary collation) and returns
  // "mysql://sluice:<password>@127.0.0.1:<port>/<name>".
  StatusOr<std::string> create_database(std::string_view name);

  // Runs SQL as root over the server's Unix socket; returns the client's output.
  StatusOr<std::string> execute(std::string_view sql);

  // stop() sends SIGTERM (ServerProcess).

 private:
  MariaDbServer(MariaDbServerOptions options, std::string dir);

  Status install();
  Status launch() override;
  Status wait_until_answering();
  std::string socket_path() const { return dir_ + "/sock"; }
  std::string log_tail() const;

  MariaDbServerOptions options_;
};

}  // namespace sluice::test
