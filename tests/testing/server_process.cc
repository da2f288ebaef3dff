#include "testing/server_process.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "testing/subprocess.h"

namespace sluice::test {

ServerProcess::~ServerProcess() {
  (void)stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

Status ServerProcess::stop() {
  if (pid_ == 0) return Status();
  const pid_t pid = std::exchange(pid_, 0);
  return stop_process(pid, stop_signal_, std::chrono::seconds(30), name_);
}

Status ServerProcess::kill_hard() {
  if (pid_ == 0) return Status(StatusCode::kFailedPrecondition, name_ + " is not running");
  const pid_t pid = std::exchange(pid_, 0);
  return stop_process(pid, SIGKILL, std::chrono::seconds(10), name_);
}

Status ServerProcess::restart() {
  if (pid_ != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  name_ + " pid " + std::to_string(pid_) + " is still running");
  }
  return launch();
}

}  // namespace sluice::test
