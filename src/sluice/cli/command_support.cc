#include "sluice/cli/command_support.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "sluice/core/duration.h"
#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"

namespace sluice::cli {

int exit_code_for(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return kExitInvalid;
    case StatusCode::kNotFound:
      return kExitNotFound;
    case StatusCode::kPermissionDenied:
    case StatusCode::kUnauthenticated:
      return kExitPermission;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
    case StatusCode::kFailedPrecondition:
      return kExitConflict;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kResourceExhausted:
      return kExitUnavailable;
    default:
      return kExitInternal;
  }
}

void Run::warn(std::string_view message) const {
  *env_.err << "sluice " << command_ << ": " << message << "\n";
}

int Run::finish(const Status& status) const {
  if (status.ok()) return kExitOk;
  warn(status.message());
  return exit_code_for(status.code());
}

Status with_items(StatusCode code, std::string_view summary,
                  const std::vector<std::string>& items) {
  std::string message(summary);
  for (const std::string& item : items) message += "\n  " + item;
  return {code, std::move(message)};
}

Status invalid_fields(std::string_view summary, const std::vector<algorithm::FieldError>& errors) {
  std::vector<std::string> items;
  items.reserve(errors.size());
  for (const algorithm::FieldError& error : errors) {
    items.push_back((error.field.empty() ? "" : error.field + ": ") + error.message);
  }
  return with_items(StatusCode::kInvalidArgument, summary, items);
}

StatusOr<Session> open_session(const Environment& env, const CommonOptions& options, Need need) {
  Session session;
  session.url = options.policies_url.empty() ? env.default_policies_url : options.policies_url;
  if (session.url.empty()) return invalid_argument("--policies: no database URL given");
  if (need != Need::kAccounts) {
    SLUICE_ASSIGN_OR_RETURN(session.policies, env.open_policies(session.url));
  }
  if (need != Need::kPolicies || !options.as_user.empty()) {
    SLUICE_ASSIGN_OR_RETURN(session.accounts, env.open_accounts(session.url));
  }
  if (options.as_user.empty()) {
    session.actor = "cli:" + (env.login.empty() ? std::string("unknown") : env.login);
    return session;
  }
  StatusOr<auth::User> user = session.accounts->get_user(options.as_user);
  if (!user.ok()) {
    if (user.status().code() != StatusCode::kNotFound) return user.status();
    return Status{StatusCode::kPermissionDenied,
                  "--as: no user named " + options.as_user + " (see `sluice admin user list`)"};
  }
  session.as = std::move(*user);
  session.actor = session.as->name;
  return session;
}

StatusOr<policy::Policy> read_policy_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return invalid_argument("cannot read --policy-file " + path);
  std::stringstream text;
  text << file.rdbuf();
  policy::ParsedPolicy parsed = policy::policy_from_text(text.str());
  if (!parsed.policy) {
    return invalid_argument("invalid policy in " + path + ": " +
                            policy::join_errors(parsed.errors));
  }
  return *std::move(parsed.policy);
}

Status decision_error(const Status& status) {
  return {
      status.code() == StatusCode::kNotFound ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
      status.to_string()};
}

StatusOr<std::string> read_input(const Environment& env, const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << env.in->rdbuf();
    return text.str();
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return invalid_argument("cannot read " + path);
  text << file.rdbuf();
  if (file.bad()) return invalid_argument("cannot read " + path);
  return text.str();
}

std::string format_time(Micros at) { return at == 0 ? "-" : format_timestamp(at); }

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string text;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    text += line + "\n";
  }
  return text;
}

}  // namespace sluice::cli
