#include "testing/subprocess.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace sluice::test {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(10);

std::vector<char*> c_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return argv;
}

std::string describe(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) text += (text.empty() ? "" : " ") + shell_quote(arg);
  return text;
}

}  // namespace

StatusOr<CommandResult> run_command(const std::vector<std::string>& command) {
  if (command.empty()) return invalid_argument("run_command: empty command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_status("pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = command;
  std::vector<char*> argv = c_argv(args);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) {
    ::close(fds[0]);
    return internal_error("spawning " + command[0] + ": " + std::strerror(spawned));
  }
  CommandResult result;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1) {
    if (errno != EINTR) return errno_status("waitpid(" + command[0] + ")");
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

StatusOr<std::string> run_checked(const std::vector<std::string>& argv) {
  StatusOr<CommandResult> result = run_command(argv);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return internal_error(describe(argv) + " exited with " + std::to_string(result->exit_code) +
                          ":\n" + tail(result->output, 4096));
  }
  return std::move(result->output);
}

StatusOr<pid_t> spawn_logged(const std::vector<std::string>& command, const std::string& log_path) {
  if (command.empty()) return invalid_argument("spawn_logged: empty command");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> args = command;
  std::vector<char*> argv = c_argv(args);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return internal_error("spawning " + command[0] + ": " + std::strerror(spawned));
  }
  return pid;
}

bool process_gone(pid_t pid) {
  int status = 0;
  const pid_t reaped = ::waitpid(pid, &status, WNOHANG);
  if (reaped == pid) return true;  // our child, now reaped
  if (::kill(pid, 0) == -1 && errno == ESRCH) return true;
  const std::string stat = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

Status wait_until_gone(pid_t pid, std::chrono::milliseconds timeout, std::string_view what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!process_gone(pid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return deadline_exceeded(std::string(what) + " pid " + std::to_string(pid) +
                               " is still running");
    }
    std::this_thread::sleep_for(kPollInterval);
  }
  return Status();
}

Status stop_process(pid_t pid, int signal, std::chrono::milliseconds grace, std::string_view what) {
  if (pid <= 0) return Status();
  if (::kill(pid, signal) != 0 && errno != ESRCH) {
    return errno_status("kill " + std::string(what));
  }
  if (wait_until_gone(pid, grace, what).ok()) return Status();
  ::kill(pid, SIGKILL);
  return wait_until_gone(pid, std::chrono::seconds(10), what);
}

StatusOr<std::string> make_temp_dir(std::string_view prefix, std::string_view owner) {
  std::string templ = (fs::temp_directory_path() / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) return errno_status("mkdtemp");
  if (!owner.empty() && ::geteuid() == 0) {
    const std::string user(owner);
    const passwd* entry = ::getpwnam(user.c_str());
    if (entry == nullptr) return internal_error("no user " + user + " on this machine");
    if (::chown(templ.c_str(), entry->pw_uid, entry->pw_gid) != 0) {
      return errno_status("chown " + templ);
    }
  }
  return templ;
}

std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

Status errno_status(const std::string& what) {
  return internal_error(what + ": " + std::strerror(errno));
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string tail(const std::string& text, std::size_t bytes) {
  return text.size() <= bytes ? text : text.substr(text.size() - bytes);
}

}  // namespace sluice::test
