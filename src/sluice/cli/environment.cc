#include "sluice/cli/environment.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "sluice/cli/commands.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/stores.h"

namespace sluice::cli {
namespace {

std::string getenv_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string login_name() {
  if (std::string user = getenv_or_empty("USER"); !user.empty()) return user;
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr) return entry->pw_name;
  return std::to_string(getuid());
}

// $XDG_DATA_HOME/sluice, else $HOME/.local/share/sluice; empty when neither is known.
std::string data_directory() {
  if (std::string xdg = getenv_or_empty("XDG_DATA_HOME"); !xdg.empty() && xdg.front() == '/') {
    return xdg + "/sluice";
  }
  std::string home = getenv_or_empty("HOME");
  if (home.empty()) {
    if (const passwd* entry = getpwuid(getuid()); entry != nullptr) home = entry->pw_dir;
  }
  return home.empty() ? "" : home + "/.local/share/sluice";
}

// mkdir -p with mode 0700 for what it creates.
Status make_directories(const std::string& path) {
  for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return unavailable("cannot create " + prefix + ": " + std::strerror(errno));
    }
    if (slash == std::string::npos) return {};
  }
}

}  // namespace

std::shared_ptr<const Environment> default_environment(std::istream& in, std::ostream& out,
                                                       std::ostream& err) {
  auto env = std::make_shared<Environment>();
  const std::string directory = data_directory();
  env->default_policies_url = directory.empty() ? "" : "sqlite://" + directory + "/policies.db";
  const std::string default_url = env->default_policies_url;
  // The default database holds password hashes: its directory is 0700 and the file 0600
  // (created empty here, which SQLite takes as a new database; its journals copy the mode).
  const auto prepare = [directory, default_url](const std::string& url) -> Status {
    if (url != default_url || directory.empty()) return {};
    SLUICE_RETURN_IF_ERROR(make_directories(directory));
    const std::string file = directory + "/policies.db";
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
    } else if (errno != EEXIST) {
      return unavailable("cannot create " + file + ": " + std::strerror(errno));
    }
    return {};
  };
  env->open_policies =
      [prepare](const std::string& url) -> StatusOr<std::shared_ptr<policy::PolicyRepository>> {
    SLUICE_RETURN_IF_ERROR(prepare(url));
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<policy::PolicyRepository> opened,
                            db::open_policy_repository(url));
    return opened;
  };
  env->open_accounts =
      [prepare](const std::string& url) -> StatusOr<std::shared_ptr<auth::AccountRepository>> {
    SLUICE_RETURN_IF_ERROR(prepare(url));
    SLUICE_ASSIGN_OR_RETURN(std::shared_ptr<auth::AccountRepository> opened,
                            db::open_account_repository(url));
    return opened;
  };
  env->clock = &SystemClock::instance();
  env->in = &in;
  env->out = &out;
  env->err = &err;
  env->login = login_name();
  env->exit = [](int code) { set_exit_code(code); };
  return env;
}

}  // namespace sluice::cli
