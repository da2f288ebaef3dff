#include "testing/redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "testing/subprocess.h"

extern char** environ;

namespace sluice::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::milliseconds(5);

// One PING over a plain socket: the fixture must not depend on the client it helps to test.
// "answering" includes -NOAUTH (requirepass set); -LOADING and silence are not.
bool answers_ping(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  timeval timeout{.tv_sec = 0, .tv_usec = 500'000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    static constexpr char kPing[] = "PING\r\n";
    if (::send(fd, kPing, sizeof kPing - 1, MSG_NOSIGNAL) ==
        static_cast<ssize_t>(sizeof kPing - 1)) {
      char reply[64] = {};
      const ssize_t n = ::recv(fd, reply, sizeof reply - 1, 0);
      if (n > 0) {
        const std::string_view text(reply, static_cast<std::size_t>(n));
        ok = text.starts_with("+PONG") || text.starts_with("-NOAUTH");
      }
    }
  }
  ::close(fd);
  return ok;
}

}  // namespace

StatusOr<std::uint16_t> RedisServer::pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return errno_status("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status status = errno_status("bind 127.0.0.1:0");
    ::close(fd);
    return status;
  }
  socklen_t length = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    Status status = errno_status("getsockname");
    ::close(fd);
    return status;
  }
  ::close(fd);
  return static_cast<std::uint16_t>(ntohs(addr.sin_port));
}

StatusOr<std::unique_ptr<RedisServer>> RedisServer::start(RedisServerOptions options) {
  const bool pick_port = options.port == 0;
  Status last;
  // A picked port can be taken by someone else before redis binds it: try a few.
  for (int attempt = 0; attempt < (pick_port ? 5 : 1); ++attempt) {
    if (pick_port) {
      StatusOr<std::uint16_t> port = pick_free_port();
      if (!port.ok()) return port.status();
      options.port = *port;
    }
    StatusOr<std::string> dir = make_temp_dir("sluice-redis-");
    if (!dir.ok()) return dir.status();
    std::unique_ptr<RedisServer> server(new RedisServer(options, *std::move(dir)));
    last = server->launch();
    if (last.ok()) return server;
  }
  return last;
}

RedisServer::RedisServer(RedisServerOptions options, std::string dir)
    : ServerProcess("redis-server", SIGTERM, std::move(dir)), options_(std::move(options)) {
  port_ = options_.port;
}

Status RedisServer::launch() {
  const fs::path dir(dir_);
  const fs::path pidfile = dir / "redis.pid";
  std::error_code ignored;
  fs::remove(pidfile, ignored);

  std::vector<std::string> args = {"redis-server",
                                   "--port",
                                   std::to_string(options_.port),
                                   "--bind",
                                   "127.0.0.1",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "no",
                                   "--daemonize",
                                   "yes",
                                   "--pidfile",
                                   pidfile.string(),
                                   "--logfile",
                                   (dir / "redis.log").string(),
                                   "--dir",
                                   dir.string(),
                                   "--enable-debug-command",
                                   "local"};
  if (!options_.requirepass.empty()) {
    args.push_back("--requirepass");
    args.push_back(options_.requirepass);
  }
  for (const std::string& arg : options_.extra_args) args.push_back(arg);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  // The launcher's own output (config errors happen before the log file is open).
  const std::string launch_log = (dir / "launch.log").string();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, launch_log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t launcher = 0;
  const int spawned =
      ::posix_spawnp(&launcher, "redis-server", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return internal_error(std::string("spawning redis-server: ") + std::strerror(spawned));
  }
  int wait_status = 0;
  while (::waitpid(launcher, &wait_status, 0) == -1) {
    if (errno != EINTR) return errno_status("waitpid(redis-server launcher)");
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return internal_error("redis-server on port " + std::to_string(options_.port) +
                          " failed to start:\n" + log_tail());
  }

  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  while (pid_ == 0) {
    const std::string text = read_text_file(pidfile.string());
    const long pid = std::strtol(text.c_str(), nullptr, 10);
    if (pid > 0) {
      pid_ = static_cast<pid_t>(pid);
      break;
    }
    const std::string log = read_text_file((dir / "redis.log").string());
    if (Clock::now() > deadline || log.find("Failed listening") != std::string::npos ||
        log.find("Address already in use") != std::string::npos) {
      return internal_error("redis-server on port " + std::to_string(options_.port) +
                            " wrote no pidfile:\n" + log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return wait_until_answering();
}

Status RedisServer::wait_until_answering() {
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.start_timeout_ms);
  for (;;) {
    if (answers_ping(options_.port)) return Status();
    if (process_gone(pid_)) {
      pid_ = 0;
      return internal_error("redis-server on port " + std::to_string(options_.port) +
                            " exited during start-up:\n" + log_tail());
    }
    if (Clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded, "redis-server on port " +
                                                       std::to_string(options_.port) +
                                                       " did not answer PING:\n" + log_tail());
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

std::string RedisServer::log_tail() const {
  const fs::path dir(dir_);
  return tail(read_text_file((dir / "launch.log").string()), 2048) +
         tail(read_text_file((dir / "redis.log").string()), 2048);
}

}  // namespace sluice::test
