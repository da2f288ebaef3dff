// What the `sluice` subcommands need from the outside world, injected so tests run them against
// in-memory fakes with captured output: the streams every command writes to (its only output
// place), and for `policy` and `admin` how to open the repositories, the clock, who is running
// the command and where the default database lives.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "sluice/auth/accounts.h"
#include "sluice/core/clock.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::cli {

struct Environment {
  std::function<StatusOr<std::shared_ptr<policy::PolicyRepository>>(const std::string& url)>
      open_policies;
  std::function<StatusOr<std::shared_ptr<auth::AccountRepository>>(const std::string& url)>
      open_accounts;
  const Clock* clock = nullptr;
  std::istream* in = nullptr;
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  // The operating-system user running the command; audit fields say "cli:<login>" without --as.
  std::string login;
  // --policies when neither the flag nor SLUICE_POLICIES is given.
  std::string default_policies_url;
  // Receives the command's exit code (docs/cli.md).
  std::function<void(int)> exit;
};

// The real thing: the SQL repositories (open_policy_repository / open_account_repository),
// the system clock, the process's streams (which main chooses), $USER, and a per-user SQLite
// database at $XDG_DATA_HOME/sluice/policies.db (default ~/.local/share/sluice/policies.db), whose
// directory (mode 0700) and file (0600) are created when that default is used.
std::shared_ptr<const Environment> default_environment(std::istream& in, std::ostream& out,
                                                       std::ostream& err);

}  // namespace sluice::cli
