#include "sluice/policy/policy.h"

#include <algorithm>

namespace sluice::policy {

bool Policy::admits_app(std::string_view app) const {
  return std::any_of(apps.begin(), apps.end(), [app](const std::string& allowed) {
    return allowed == "*" || allowed == app;
  });
}

std::string_view mode_name(Mode mode) { return mode == Mode::kShadow ? "shadow" : "enforce"; }

std::string_view failure_mode_name(FailureMode mode) {
  switch (mode) {
    case FailureMode::kFailOpen:
      return "fail_open";
    case FailureMode::kFailClosed:
      return "fail_closed";
    case FailureMode::kLocal:
      return "local";
    case FailureMode::kSplit:
      return "split";
  }
  return "fail_open";
}

}  // namespace sluice::policy
