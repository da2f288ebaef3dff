// RedisServer: a real redis-server for integration tests and benchmarks, on a free loopback port
// in its own temporary directory (no persistence), stopped by PID — never by name, the machine is
// shared.
//
// Namespace note: `sluice::test`, not `sluice::testing`, so `testing::` inside namespace sluice
// keeps meaning GoogleTest.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/status.h"

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

class RedisServer {
 public:
  // Launches `redis-server --daemonize yes` with a pidfile and waits until it answers PING.
  // DEBUG is enabled for local connections (tests use DEBUG SLEEP). Errors carry the tail of the
  // server's log.
  static StatusOr<std::unique_ptr<RedisServer>> start(RedisServerOptions options = {});

  // A free loopback port nothing listens on right now (bind to port 0, read it, close).
  static StatusOr<std::uint16_t> pick_free_port();

  // Stops the server (SIGTERM, then SIGKILL if it lingers), waits for it to exit and removes the
  // temporary directory.
  ~RedisServer();

  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::string host() const { return "127.0.0.1"; }
  std::uint16_t port() const { return options_.port; }
  // PID of the running server; 0 when it is not running.
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }

  // SIGKILL, then wait until the process is gone. The data set is lost (no persistence).
  Status kill_hard();
  // SIGTERM, then wait until the process is gone (SIGKILL after a few seconds).
  Status stop();
  // Starts again on the same port and directory (after kill_hard or stop) and waits for PING.
  Status restart();

 private:
  RedisServer(RedisServerOptions options, std::string dir);

  Status launch();
  Status wait_until_answering();
  Status wait_until_gone(pid_t pid, int timeout_ms);
  std::string log_tail() const;

  RedisServerOptions options_;
  std::string dir_;
  pid_t pid_ = 0;
};

}  // namespace sluice::test
