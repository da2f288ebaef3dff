#include "sluice/auth/accounts.h"

#include <algorithm>

#include "sluice/core/key.h"

namespace sluice::auth {

Status validate_app_name(std::string_view name, std::string_view field) {
  if (name == "*") {
    return invalid_argument(std::string(field) +
                            ": \"*\" means any app in a policy and cannot name one");
  }
  return validate_policy_name(name, field);
}

Status validate_user_name(std::string_view name, std::string_view field) {
  std::string without_at(name);
  std::replace(without_at.begin(), without_at.end(), '@', '_');
  if (is_valid_policy_name(without_at)) return {};
  return invalid_argument(std::string(field) +
                          ": must be 1-128 letters, digits, '.', '_', '-' or '@' (got \"" +
                          std::string(name) + "\")");
}

}  // namespace sluice::auth
