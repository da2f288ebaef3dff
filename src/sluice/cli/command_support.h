// Helpers shared by the `sluice` subcommands: the exit codes of docs/cli.md, the one place a
// command's error becomes its message and exit code (Run::finish), input files, time and table
// formatting, and the session (repositories, acting user, audit actor) the `policy` and `admin`
// subcommands run in.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/auth/accounts.h"
#include "sluice/cli/environment.h"
#include "sluice/core/invalid_input.h"  // the commands' bad input: exit 2
#include "sluice/policy/policy.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::cli {

// docs/cli.md, "Exit codes".
enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,     // unexpected failure
  kExitInvalid = 2,      // bad flags or input: the message names the field
  kExitNotFound = 3,     // no such policy, user, app or token
  kExitPermission = 4,   // --as USER may not do this
  kExitConflict = 5,     // exists already, stale version, refused by the current state
  kExitUnavailable = 6,  // the database cannot be reached
};

int exit_code_for(StatusCode code);

// Options every `policy` and `admin` subcommand takes.
struct CommonOptions {
  std::string policies_url;  // empty: SLUICE_POLICIES or the per-user default
  std::string as_user;       // empty: act as the operator (no authorization checks)
};

// A command's run: its output streams, and the one place its error is told to its user. What a
// command prints is its output, not a log line (docs/decisions.md); the running server logs
// through core/logger.h.
class Run {
 public:
  Run(const Environment& env, std::string command) : env_(env), command_(std::move(command)) {}

  std::ostream& out() const { return *env_.out; }
  // Progress, warnings and notes for humans; data goes to out().
  std::ostream& note() const { return *env_.err; }
  const Environment& env() const { return env_; }

  // Prints "sluice <command>: <message>" on the note stream: a warning that does not end the run.
  void warn(std::string_view message) const;
  // The exit code of a command's body: kExitOk for OK; otherwise prints "sluice <command>:
  // <message>" (a message of several lines as it is) and returns the exit code of its code.
  int finish(const Status& status) const;

 private:
  const Environment& env_;
  std::string command_;
};

// An error of `code` whose message is `summary` followed by one indented line per item: how a
// command reports everything wrong with its input at once.
Status with_items(StatusCode code, std::string_view summary, const std::vector<std::string>& items);
// InvalidArgument (exit 2): `summary`, then one "field: message" line per field error.
Status invalid_fields(std::string_view summary, const std::vector<algorithm::FieldError>& errors);
// Where a command acts: the repositories it opened, and who it acts as.
struct Session {
  std::string url;
  std::shared_ptr<policy::PolicyRepository> policies;  // null unless opened
  std::shared_ptr<auth::AccountRepository> accounts;   // null unless opened (or --as)
  std::optional<auth::User> as;                        // set with --as: authorization applies
  std::string actor;  // recorded in audit fields: the --as user or "cli:<login>"
};

enum class Need { kPolicies, kAccounts, kBoth };

// Opens what the command needs; with --as also the accounts, to load the user (NotFound for
// an unknown one is reported as PermissionDenied: acting as nobody grants nothing).
StatusOr<Session> open_session(const Environment& env, const CommonOptions& options, Need need);

// The policy document of --policy-file PATH (`sluice acquire` and the quota commands):
// InvalidArgument when it cannot be read or is invalid, naming every field error on one line.
StatusOr<policy::Policy> read_policy_file(const std::string& path);

// A decision's error as `sluice acquire` and the quota commands report it: the status with its
// code's name, exit 3 (NotFound) or 2 (any other).
Status decision_error(const Status& status);
template <typename T>
StatusOr<T> decision_error(StatusOr<T> result) {
  if (result.ok()) return result;
  return decision_error(result.status());
}

// The whole of FILE, or of standard input for "-". InvalidArgument naming the file otherwise.
StatusOr<std::string> read_input(const Environment& env, const std::string& path);

// A table cell for an instant: format_timestamp's "2026-11-24T09:15:02.123456Z"; "-" for 0
// (never set).
std::string format_time(Micros at);

// Left-aligned columns separated by two spaces; the first row is the header.
std::string format_table(const std::vector<std::vector<std::string>>& rows);

using auth::validate_app_name;
using auth::validate_user_name;

}  // namespace sluice::cli
