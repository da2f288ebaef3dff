// Policy documents read: policy_from_json checks every field of one document at once and
// reports each problem with its field; join_errors puts those errors on one line.
#include "sluice/policy/document.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/token_lease.h"
#include "sluice/core/duration.h"
#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/defence_fields.h"
#include "sluice/policy/quota_document.h"

namespace sluice::policy {
namespace {

using algorithm::Limit;
using nlohmann::json;

// Whether a document must hold a field: a missing required one is an error ("is required").
enum class Field : std::uint8_t { kRequired, kOptional };

Field presence_of(const algorithm::Parameter& parameter) {
  return parameter.required ? Field::kRequired : Field::kOptional;
}

// Reads typed fields out of a JSON object, recording an error per bad field.
class FieldReader {
 public:
  FieldReader(const json& object, std::string prefix, std::vector<FieldError>& errors)
      : object_(object), prefix_(std::move(prefix)), errors_(errors) {}

  std::string field(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
  }
  void fail(std::string_view key, std::string message) {
    errors_.push_back({.field = field(key), .message = std::move(message)});
  }
  bool has(std::string_view key) const { return object_.contains(key); }

  // Errors for every key outside `known`.
  void reject_unknown(std::span<const std::string_view> known, std::string_view what) {
    for (const auto& [key, value] : object_.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail(key, "unknown field" + (what.empty() ? "" : " for " + std::string(what)));
      }
    }
  }

  std::optional<std::int64_t> integer(std::string_view key, Field field = Field::kRequired) {
    const json* value = find(key, field);
    if (value == nullptr) return std::nullopt;
    // nlohmann stores every non-negative integer as unsigned and is_number_integer() is true for
    // those too, so test the range first or values above INT64_MAX would wrap to negatives.
    if (value->is_number_unsigned() &&
        value->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      fail(key, "is too large");
      return std::nullopt;
    }
    if (value->is_number_integer()) return value->get<std::int64_t>();
    fail(key, "must be an integer");
    return std::nullopt;
  }

  std::optional<Micros> duration(std::string_view key, Field field = Field::kRequired) {
    const json* value = find(key, field);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) {
      fail(key, "must be a duration string such as \"250ms\", \"1s\" or \"5m\"");
      return std::nullopt;
    }
    StatusOr<Micros> parsed = parse_duration(value->get<std::string>());
    if (!parsed.ok()) {
      fail(key, parsed.status().message());
      return std::nullopt;
    }
    return *parsed;
  }

  // An instant: ISO 8601 text as people read it ("2026-11-24T09:15:02.123456Z") or
  // microseconds since the epoch as programs write it. Optional.
  std::optional<Micros> timestamp(std::string_view key) {
    const json* value = find(key, Field::kOptional);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) {
      StatusOr<Micros> parsed = parse_timestamp(value->get<std::string>());
      if (parsed.ok()) return *parsed;
      fail(key, parsed.status().message());
      return std::nullopt;
    }
    if (value->is_number_integer()) return integer(key, Field::kOptional);
    fail(key,
         "must be a time such as \"2026-11-24T09:15:02.123456Z\" or microseconds since the epoch");
    return std::nullopt;
  }

  std::optional<std::string> string(std::string_view key, Field field = Field::kRequired) {
    const json* value = find(key, field);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) return value->get<std::string>();
    fail(key, "must be a string");
    return std::nullopt;
  }

  std::optional<bool> boolean(std::string_view key) {
    const json* value = find(key, Field::kOptional);
    if (value == nullptr) return std::nullopt;
    if (value->is_boolean()) return value->get<bool>();
    fail(key, "must be true or false");
    return std::nullopt;
  }

  void reject_unknown(std::initializer_list<std::string_view> known, std::string_view what) {
    reject_unknown(std::span(known.begin(), known.size()), what);
  }

  // One of `names` (e.g. "enforce", "shadow"); index into names.
  std::optional<std::size_t> choice(std::string_view key,
                                    std::initializer_list<std::string_view> names) {
    return choice(key, std::span(names.begin(), names.size()));
  }
  std::optional<std::size_t> choice(std::string_view key, std::span<const std::string_view> names) {
    std::optional<std::string> text = string(key, Field::kOptional);
    if (!text) return std::nullopt;
    const auto it = std::find(names.begin(), names.end(), *text);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    std::string allowed;
    for (std::string_view name : names)
      allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    fail(key, "must be one of " + allowed + " (got \"" + *text + "\")");
    return std::nullopt;
  }

  const json* find(std::string_view key, Field field) {
    const auto it = object_.find(key);
    if (it != object_.end() && !it->is_null()) return &*it;
    if (field == Field::kRequired) fail(key, "is required");
    return nullptr;
  }

 private:
  const json& object_;
  std::string prefix_;
  std::vector<FieldError>& errors_;
};

// One parameter of a limit as its catalogue row describes it; `absent` when left out.
std::optional<std::int64_t> read_parameter(FieldReader& r, const algorithm::Parameter& parameter) {
  std::optional<std::int64_t> value;
  switch (parameter.type) {
    case algorithm::ParameterType::kCount:
      value = r.integer(parameter.name, presence_of(parameter));
      break;
    case algorithm::ParameterType::kDuration:
      value = r.duration(parameter.name, presence_of(parameter));
      break;
    case algorithm::ParameterType::kChoice:
      if (const auto index = r.choice(parameter.name, parameter.choices)) {
        value = static_cast<std::int64_t>(*index);
      }
      break;
  }
  return value ? value : parameter.absent;
}

std::optional<Limit> read_limit(const json& document, const std::string& prefix,
                                std::vector<FieldError>& errors) {
  if (!document.is_object()) {
    errors.push_back({.field = prefix, .message = "must be an object with an \"algorithm\""});
    return std::nullopt;
  }
  FieldReader r(document, prefix, errors);
  const std::size_t errors_before_algorithm = errors.size();
  std::vector<std::string_view> names;
  for (const algorithm::Algorithm& row : algorithm::algorithms()) names.push_back(row.name);
  const std::optional<std::size_t> kind = r.choice("algorithm", names);
  if (!kind) {
    // Absent or null: choice() reported nothing, and a silently skipped limit would be lost.
    if (errors.size() == errors_before_algorithm) r.fail("algorithm", "is required");
    return std::nullopt;
  }
  const algorithm::Algorithm& row = algorithm::algorithms()[*kind];
  if (row.calendar && (r.has("calendar") || r.has("time_zone"))) {  // quota_document.h
    std::optional<algorithm::FixedWindow> calendar =
        calendar_window_from_json(document, prefix, errors);
    if (!calendar) return std::nullopt;
    return Limit(*std::move(calendar));
  }
  const std::size_t before = errors.size();
  std::vector<std::string_view> known = {"algorithm"};
  for (const algorithm::Parameter& parameter : row.parameters) known.push_back(parameter.name);
  r.reject_unknown(known, row.name);
  // Choices first, then the rest in document order: the order errors have always been listed in.
  std::vector<std::optional<std::int64_t>> values(row.parameters.size());
  for (const bool choices : {true, false}) {
    for (std::size_t i = 0; i < row.parameters.size(); ++i) {
      if ((row.parameters[i].type == algorithm::ParameterType::kChoice) != choices) continue;
      values[i] = read_parameter(r, row.parameters[i]);
    }
  }
  if (errors.size() != before) return std::nullopt;  // missing/mistyped fields already reported
  return algorithm::make_limit(row, values);
}

std::vector<std::string> read_apps(FieldReader& r, std::vector<FieldError>& errors) {
  std::vector<std::string> apps;
  const json* value = r.find("apps", Field::kRequired);
  if (value == nullptr) return apps;
  if (!value->is_array() || value->empty()) {
    r.fail("apps", "must be a non-empty list of app names (or [\"*\"] for any app)");
    return apps;
  }
  for (std::size_t i = 0; i < value->size(); ++i) {
    const json& app = (*value)[i];
    const std::string field = r.field("apps") + "[" + std::to_string(i) + "]";
    if (!app.is_string()) {
      errors.push_back({.field = field, .message = "must be a string"});
    } else if (app.get<std::string>() != "*" && !is_valid_policy_name(app.get<std::string>())) {
      errors.push_back(
          {.field = field, .message = "must be \"*\" or 1-128 letters, digits, '.', '_' or '-'"});
    } else {
      apps.push_back(app.get<std::string>());
    }
  }
  return apps;
}

// lease_tokens / lease_period (docs/defences.md "Token leasing for hot keys").
void read_lease_fields(FieldReader& r, Policy& policy) {
  policy.lease_tokens = r.integer("lease_tokens", Field::kOptional).value_or(0);
  policy.lease_period = r.duration("lease_period", Field::kOptional).value_or(kDefaultLeasePeriod);
  if (policy.lease_tokens < 0 || policy.lease_tokens > kMaxLeaseTokens) {
    r.fail("lease_tokens", "must be between 0 (off) and " + std::to_string(kMaxLeaseTokens));
  } else if (policy.lease_tokens > 0) {
    if (Status status = algorithm::check_token_lease_limits(policy.limits); !status.ok()) {
      r.fail("lease_tokens", status.message());
    }
  }
  if (policy.lease_period < kMicrosPerMilli || policy.lease_period > kMaxLeasePeriod) {
    r.fail("lease_period", "must be between 1ms and 60s");
  }
}

}  // namespace

ParsedPolicy policy_from_json(const json& document, const DocumentOptions& options) {
  ParsedPolicy result;
  auto& errors = result.errors;
  if (!document.is_object()) {
    errors.push_back({.field = "", .message = "a policy must be an object"});
    return result;
  }
  FieldReader r(document, "", errors);
  std::initializer_list<std::string_view> known = {
      "name", "description", "apps", "mode", "on_store_failure", "enabled", "limits", "version",
      "created_by", "updated_by", "created_at", "updated_at", "descriptors", "max_debt",
      "lease_tokens", "lease_period", "penalty", "retry_jitter",
      // The defences' fields (defence_fields.h).
      "rollout", "over_limit_cache"};
  r.reject_unknown(known, "");
  Policy policy;
  if (auto name = r.string("name")) {
    policy.name = *name;
    if (Status status = validate_policy_name(policy.name); !status.ok()) {
      r.fail("name", status.message().substr(std::string_view("name: ").size()));
    }
  }
  policy.description = r.string("description", Field::kOptional).value_or("");
  if (policy.description.size() > options.max_description_bytes) {
    r.fail("description", "must be at most " + std::to_string(options.max_description_bytes) +
                              " bytes (got " + std::to_string(policy.description.size()) + ")");
  }
  policy.apps = read_apps(r, errors);
  policy.mode =
      r.choice("mode", {"enforce", "shadow"}).value_or(0) == 1 ? Mode::kShadow : Mode::kEnforce;
  policy.on_store_failure = static_cast<FailureMode>(
      r.choice("on_store_failure", {"fail_open", "fail_closed", "local", "split"}).value_or(0));
  policy.enabled = r.boolean("enabled").value_or(true);
  if (const json* section = r.find("descriptors", Field::kOptional)) {
    policy.descriptors = descriptor_section_from_json(*section, "descriptors", errors);
  }
  const bool unlimited = policy.descriptors && policy.descriptors->unlimited;
  if (unlimited) {
    // Envoy's `unlimited: true` node: matched, never limited, so limits would never apply.
    if (const json* limits = r.find("limits", Field::kOptional);
        limits != nullptr && !(limits->is_array() && limits->empty())) {
      r.fail("limits", "must be absent (or empty) when descriptors.unlimited is true");
    }
  } else if (const json* limits = r.find("limits", Field::kRequired)) {
    if (!limits->is_array() || limits->empty()) {
      r.fail("limits", "must be a non-empty list of limits");
    } else if (limits->size() > options.max_limits) {
      r.fail("limits", "must hold at most " + std::to_string(options.max_limits) + " limits (got " +
                           std::to_string(limits->size()) + ")");
    } else {
      for (std::size_t i = 0; i < limits->size(); ++i) {
        const std::string prefix = "limits[" + std::to_string(i) + "]";
        std::optional<Limit> limit = read_limit((*limits)[i], prefix, errors);
        if (!limit) continue;
        std::vector<FieldError> invalid = algorithm::validate_limit(*limit, prefix, options.limits);
        errors.insert(errors.end(), invalid.begin(), invalid.end());
        policy.limits.push_back(*limit);
      }
    }
  }
  policy.max_debt = r.integer("max_debt", Field::kOptional).value_or(0);
  {
    std::vector<FieldError> invalid =
        algorithm::validate_max_debt(policy.max_debt, policy.limits, options.limits);
    errors.insert(errors.end(), invalid.begin(), invalid.end());
  }
  read_defence_fields(document, policy, errors);
  read_lease_fields(r, policy);
  if (const json* penalty = r.find("penalty", Field::kOptional)) {
    policy.penalty = penalty_from_json(*penalty, errors);
  }
  if (const json* jitter = r.find("retry_jitter", Field::kOptional)) {
    policy.retry_jitter_percent = retry_jitter_from_json(*jitter, errors).value_or(0);
  }
  if (policy.penalty) {
    // The penalty box lives in the store, which counts each denial as a strike and applies the
    // block: a defence that answers without the store would bypass it.
    if (policy.over_limit_cache.value_or(false)) {
      r.fail("over_limit_cache",
             "cannot be true with penalty (cached denials would not reach the store, which "
             "counts them as strikes)");
    }
    if (policy.lease_tokens > 0) {
      r.fail("lease_tokens",
             "cannot be used with penalty (leased units are spent without the store, which "
             "applies the penalty box)");
    }
  }
  if (options.allow_audit_fields) {
    policy.version = r.integer("version", Field::kOptional).value_or(0);
    policy.created_by = r.string("created_by", Field::kOptional).value_or("");
    policy.updated_by = r.string("updated_by", Field::kOptional).value_or("");
    policy.created_at = r.timestamp("created_at").value_or(0);
    policy.updated_at = r.timestamp("updated_at").value_or(0);
  } else {
    for (std::string_view audit :
         {"version", "created_by", "updated_by", "created_at", "updated_at"}) {
      if (r.has(audit)) r.fail(audit, "is maintained by Sluice and cannot be set");
    }
  }
  if (errors.empty()) result.policy = std::move(policy);
  return result;
}

std::string join_errors(const std::vector<FieldError>& errors) {
  std::string text;
  for (const FieldError& error : errors) {
    if (!text.empty()) text += "; ";
    text += error.field.empty() ? error.message : error.field + ": " + error.message;
  }
  return text;
}

}  // namespace sluice::policy
