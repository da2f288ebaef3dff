// RedisServer: a real redis-server for integration tests and benchmarks, on a free loopback port
// in its own temporary directory (no persistence), stopped by PID — never by name, the machine is
// shared.
//
// Namespace note: `sluice::test`, not `sluice::testing`, so `testing::` inside namespace sluice
// keeps meaning GoogleTest.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/status.h"
#include "testing/server_process.h"

namespace sluice::test {

struct RedisServerOptions {
  // 0: pick a free loopback port.
  std::uint16_t port = 0;
  // Non-empty: `requirepass` (the default user's password).
  std::string requirepass;
  // Extra `redis-server` arguments, e.g. {"--user", "alice", "on", ">secret", "~*", "+@all"}.
  std::vector<std::string> extra_args;
  // Milliseconds to wait for the server to answer PING after launch.
  int start_timeout_ms = 10'000;
};

class RedisServer final : public ServerProcess {
 public:
  // Launches `redis-server --daemonize yes` with a pidfile and waits until it answers PING.
  // DEBUG is enabled for local connections (tests use DEBUG SLEEP). Errors carry the tail of the
  // server's log. Stopping (SIGTERM), kill_hard, restart and the directory: ServerProcess.
  static StatusOr<std::unique_ptr<RedisServer>> start(RedisServerOptions options = {});

  // A free loopback port nothing listens on right now (bind to port 0, read it, close).
  static StatusOr<std::uint16_t> pick_free_port();

 private:
  RedisServer(RedisServerOptions options, std::string dir);

  Status launch() override;
  Status wait_until_answering();
  std::string log_tail() const;

  RedisServerOptions options_;
};

}  // namespace sluice::test
