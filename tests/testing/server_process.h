// ServerProcess: what the database fixtures (MariaDbServer, PostgresServer) share — one server
// process owned by PID (never found or stopped by name: the machine is shared), the temporary
// directory it runs in, and stop / kill / restart. Each fixture supplies launch().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "sluice/status.h"

namespace sluice::test {

class ServerProcess {
 public:
  // Stops the server (the fixture's stop signal, SIGKILL if it lingers) and removes the directory.
  virtual ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  std::string host() const { return "127.0.0.1"; }
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }

  // The stop signal, then wait (SIGKILL after 30 s). The directory stays.
  Status stop();
  // SIGKILL and wait. The directory stays.
  Status kill_hard();
  // Launches again on the same port and directory, and waits until the server answers.
  Status restart();

 protected:
  // `name` names the process in errors; `stop_signal` asks it to shut down.
  ServerProcess(std::string name, int stop_signal, std::string dir)
      : name_(std::move(name)), stop_signal_(stop_signal), dir_(std::move(dir)) {}

  // Starts the server on port_ in dir_, sets pid_, and returns once it answers.
  virtual Status launch() = 0;

 private:
  const std::string name_;
  const int stop_signal_;

 protected:
  std::string dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = 0;
};

}  // namespace sluice::test
