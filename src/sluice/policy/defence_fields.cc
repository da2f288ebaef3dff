#include "sluice/policy/defence_fields.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "sluice/algorithm/evaluate.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

// The percentage a rollout value spells, or nothing when it spells none.
std::optional<double> read_percent(const json& value) {
  if (value.is_number() && !value.is_boolean()) return value.get<double>();
  if (!value.is_string()) return std::nullopt;
  std::string_view text = value.get_ref<const std::string&>();
  if (text.ends_with('%')) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  double percent = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return percent;
}

}  // namespace

void read_defence_fields(const json& document, Policy& policy,
                         std::vector<algorithm::FieldError>& errors) {
  if (auto it = document.find("rollout"); it != document.end() && !it->is_null()) {
    const std::optional<double> percent = read_percent(*it);
    if (!percent || !std::isfinite(*percent) || *percent < 0 || *percent > 100) {
      errors.push_back({"rollout", "must be a percentage from 0 to 100, as 10 or \"10%\" (got " +
                                       it->dump() + ")"});
    } else if (policy.mode != Mode::kEnforce) {
      errors.push_back(
          {"rollout", "needs mode enforce: a shadow policy already shadows every subject"});
    } else {
      policy.rollout = *percent;
    }
  }
  if (auto it = document.find("over_limit_cache"); it != document.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      errors.push_back({"over_limit_cache", "must be true or false (got " + it->dump() + ")"});
    } else if (it->get<bool>() && algorithm::uses_leases(policy.limits)) {
      errors.push_back({"over_limit_cache",
                        "cannot be true for a policy with a concurrency limit: another caller's "
                        "release can allow the next request at any time"});
    } else {
      policy.over_limit_cache = it->get<bool>();
    }
  }
}

std::string format_rollout(double percent) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g%%", percent);
  return text;
}

void write_defence_fields(const Policy& policy, json& document) {
  if (policy.rollout) document["rollout"] = format_rollout(*policy.rollout);
  if (policy.over_limit_cache) document["over_limit_cache"] = *policy.over_limit_cache;
}

bool uses_over_limit_cache(const Policy& policy) {
  if (algorithm::uses_leases(policy.limits)) return false;
  if (policy.penalty) return false;  // the store must see each denial: it counts the strikes
  if (policy.over_limit_cache) return *policy.over_limit_cache;
  return policy.max_debt == 0;
}

}  // namespace sluice::policy
