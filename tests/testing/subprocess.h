// Process helpers for the server fixtures (MariaDB, PostgreSQL): run a command and capture its
// output, spawn a server in the background, wait for a PID to go away, make temporary
// directories owned by a service user. Nothing here finds or stops processes by name.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::test {

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

// Runs `argv` (argv[0] looked up in PATH), waits for it and captures its output. An error only
// when it could not be started; a failing command is a result with a non-zero exit code.
StatusOr<CommandResult> run_command(const std::vector<std::string>& argv);

// Like run_command, but an error (with the output) unless the command exits 0.
StatusOr<std::string> run_checked(const std::vector<std::string>& argv);

// Starts `argv` as a child process with stdout and stderr appended to `log_path`.
StatusOr<pid_t> spawn_logged(const std::vector<std::string>& argv, const std::string& log_path);

// True when `pid` has exited (a zombie counts as exited). Reaps it if it is our child.
bool process_gone(pid_t pid);

// Waits until process_gone(pid); DeadlineExceeded after `timeout`.
Status wait_until_gone(pid_t pid, std::chrono::milliseconds timeout, std::string_view what);

// SIGNAL `signal`, wait; SIGKILL after `grace` if it lingers.
Status stop_process(pid_t pid, int signal, std::chrono::milliseconds grace, std::string_view what);

// A new directory under the system temp dir, named "<prefix>XXXXXX"; when `owner` is not empty
// and we are root, chowned to that user (servers refuse to run as root).
StatusOr<std::string> make_temp_dir(std::string_view prefix, std::string_view owner = {});

// Quotes `text` for a POSIX shell (single quotes).
std::string shell_quote(std::string_view text);

// Internal "<what>: <strerror(errno)>".
Status errno_status(const std::string& what);

std::string read_text_file(const std::string& path);
std::string tail(const std::string& text, std::size_t bytes);

}  // namespace sluice::test
