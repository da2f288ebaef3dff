#include "sluice/policy/document.h"

#include <yaml-cpp/yaml.h>

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
#include "sluice/policy/yaml_text.h"

namespace sluice::policy {
namespace {

using algorithm::Limit;
using nlohmann::json;

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

  std::optional<std::int64_t> integer(std::string_view key, bool required = true) {
    const json* value = find(key, required);
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

  std::optional<Micros> duration(std::string_view key, bool required = true) {
    const json* value = find(key, required);
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
    const json* value = find(key, false);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) {
      StatusOr<Micros> parsed = parse_timestamp(value->get<std::string>());
      if (parsed.ok()) return *parsed;
      fail(key, parsed.status().message());
      return std::nullopt;
    }
    if (value->is_number_integer()) return integer(key, false);
    fail(key,
         "must be a time such as \"2026-11-24T09:15:02.123456Z\" or microseconds since the epoch");
    return std::nullopt;
  }

  std::optional<std::string> string(std::string_view key, bool required = true) {
    const json* value = find(key, required);
    if (value == nullptr) return std::nullopt;
    if (value->is_string()) return value->get<std::string>();
    fail(key, "must be a string");
    return std::nullopt;
  }

  std::optional<bool> boolean(std::string_view key) {
    const json* value = find(key, false);
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
    std::optional<std::string> text = string(key, false);
    if (!text) return std::nullopt;
    const auto it = std::find(names.begin(), names.end(), *text);
    if (it != names.end()) return static_cast<std::size_t>(it - names.begin());
    std::string allowed;
    for (std::string_view name : names)
      allowed += (allowed.empty() ? "" : ", ") + std::string(name);
    fail(key, "must be one of " + allowed + " (got \"" + *text + "\")");
    return std::nullopt;
  }

  const json* find(std::string_view key, bool required) {
    const auto it = object_.find(key);
    if (it != object_.end() && !it->is_null()) return &*it;
    if (required) fail(key, "is required");
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
      value = r.integer(parameter.name, parameter.required);
      break;
    case algorithm::ParameterType::kDuration:
      value = r.duration(parameter.name, parameter.required);
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
  const json* value = r.find("apps", true);
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

bool is_decimal_integer(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// YAML aliases share a node, and JSON copies it: `b: [*a, *a]` doubles `a`, so a few hundred
// bytes of nested aliases expand to gigabytes. The conversion stops past this many values, far
// more than any policy file holds (500 policies of a few limits are ~20 000).
constexpr std::size_t kMaxYamlValues = 200'000;

// Converts one YAML node; `budget` is the number of values still allowed.
StatusOr<json> yaml_to_json(const YAML::Node& node, std::size_t& budget) {
  if (budget == 0) {
    return invalid_argument("not valid YAML: more than " + std::to_string(kMaxYamlValues) +
                            " values once aliases are expanded");
  }
  --budget;
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json object = json::object();
      for (const auto& item : node) {
        if (!item.first.IsScalar()) {
          return invalid_argument("not valid YAML: the key at line " +
                                  std::to_string(item.first.Mark().line + 1) +
                                  " is not text (a policy document's keys are field names)");
        }
        SLUICE_ASSIGN_OR_RETURN(json value, yaml_to_json(item.second, budget));
        object[item.first.Scalar()] = std::move(value);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      json array = json::array();
      for (const auto& item : node) {
        SLUICE_ASSIGN_OR_RETURN(json value, yaml_to_json(item, budget));
        array.push_back(std::move(value));
      }
      return array;
    }
    case YAML::NodeType::Scalar: {
      // YAML 1.2 core schema, strictly: decimal integers (no octal "010", no "0x10"), true/false
      // and null; everything else — and anything quoted — is a string.
      const std::string& text = node.Scalar();
      if (node.Tag() == "!") return json(text);
      if (is_decimal_integer(text)) {
        // Beyond a double's range JSON has no number for it: it stays text, and the field's
        // check says what it should be.
        json number = json::parse(text, nullptr, /*allow_exceptions=*/false);
        return number.is_discarded() ? json(text) : number;
      }
      if (text == "true" || text == "false") return json(text == "true");
      if (text == "null" || text == "~") return json(nullptr);
      return json(text);
    }
    default:
      return json(nullptr);
  }
}

// A cursor over text, for the hand-written matchers below (std::regex recursed once per
// character and overflowed the stack on a 100 000-character description).
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  bool at_end() const { return position_ == text_.size(); }
  bool take(char c) {
    if (at_end() || text_[position_] != c) return false;
    ++position_;
    return true;
  }
  bool take_one_of(std::string_view chars) {
    if (at_end() || chars.find(text_[position_]) == std::string_view::npos) return false;
    ++position_;
    return true;
  }
  bool take_word(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }
  // Takes up to `most` characters from `chars`; returns how many.
  std::size_t take_run(std::string_view chars, std::size_t most = std::string_view::npos) {
    std::size_t taken = 0;
    while (taken < most && take_one_of(chars)) ++taken;
    return taken;
  }

 private:
  std::string_view text_;
  std::size_t position_ = 0;
};

constexpr std::string_view kDigits = "0123456789";
constexpr std::string_view kDigitsOrUnderscore = "0123456789_";

// [-+]?(\.[0-9_]+|[0-9][0-9_]*(\.[0-9_]*)?)(e[-+]?[0-9]+)? — decimal and float.
bool is_decimal(std::string_view text) {
  Scanner s(text);
  s.take_one_of("-+");
  if (s.take('.')) {
    if (s.take_run(kDigitsOrUnderscore) == 0) return false;
  } else {
    if (!s.take_one_of(kDigits)) return false;
    s.take_run(kDigitsOrUnderscore);
    if (s.take('.')) s.take_run(kDigitsOrUnderscore);
  }
  if (s.take('e')) {
    s.take_one_of("-+");
    if (s.take_run(kDigits) == 0) return false;
  }
  return s.at_end();
}

// [-+]?0[xob][0-9a-f_]+ — hexadecimal, octal, binary.
bool is_prefixed_integer(std::string_view text) {
  Scanner s(text);
  s.take_one_of("-+");
  return s.take('0') && s.take_one_of("xob") && s.take_run("0123456789abcdef_") > 0 && s.at_end();
}

// [-+]?\.(inf|nan) — infinity and not-a-number.
bool is_special_float(std::string_view text) {
  Scanner s(text);
  s.take_one_of("-+");
  return s.take('.') && (s.take_word("inf") || s.take_word("nan")) && s.at_end();
}

// [-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)? — YAML 1.1 sexagesimal ("1:30").
bool is_sexagesimal(std::string_view text) {
  Scanner s(text);
  s.take_one_of("-+");
  if (!s.take_one_of(kDigits)) return false;
  s.take_run(kDigitsOrUnderscore);
  std::size_t groups = 0;
  while (s.take(':')) {
    // One digit, or two whose first is 0-5. Taking the second whenever allowed loses no match:
    // a digit can start neither another group nor the fraction.
    if (s.take_one_of("012345")) {
      s.take_one_of(kDigits);
    } else if (!s.take_one_of(kDigits)) {
      return false;
    }
    ++groups;
  }
  if (groups == 0) return false;
  if (s.take('.')) s.take_run(kDigitsOrUnderscore);
  return s.at_end();
}

// [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.* — dates and timestamps.
bool starts_with_date(std::string_view text) {
  Scanner s(text);
  return s.take_run(kDigits, 4) == 4 && s.take('-') && s.take_run(kDigits, 2) > 0 && s.take('-') &&
         s.take_one_of(kDigits);
}

}  // namespace

bool yaml_would_misread(std::string_view text) {
  if (text.empty()) return true;
  std::string lower;
  for (const char c : text) lower.push_back(static_cast<char>(std::tolower(c)));
  for (std::string_view word : {"true", "false", "null", "~", "yes", "no", "on", "off", "y", "n"}) {
    if (lower == word) return true;
  }
  // Numbers in any YAML 1.1 or 1.2 spelling ("42", "-1.5e3", "0x1F", "0o17", "1_000", ".inf",
  // "1:30" sexagesimal) and dates, so every YAML reader sees a string. "1s" stays plain.
  return is_decimal(lower) || is_prefixed_integer(lower) || is_special_float(lower) ||
         is_sexagesimal(lower) || starts_with_date(lower);
}

namespace {

void emit_yaml(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      // Document order, not json's alphabetical one: what a reader looks for first comes first.
      static constexpr std::string_view kLeading[] = {
          "id",          "name",      "policy",  "action",           "actor",      "at",
          "description", "apps",      "mode",    "on_store_failure", "enabled",    "descriptors",
          "limits",      "algorithm", "version", "created_by",       "created_at", "updated_by",
          "updated_at",  "old",       "new"};
      std::vector<std::string> keys;
      for (std::string_view key : kLeading) {
        if (value.contains(key)) keys.emplace_back(key);
      }
      for (const auto& [key, item] : value.items()) {
        if (std::find(std::begin(kLeading), std::end(kLeading), key) == std::end(kLeading)) {
          keys.push_back(key);
        }
      }
      out << YAML::BeginMap;
      for (const std::string& key : keys) {
        out << YAML::Key;
        if (yaml_would_misread(key)) out << YAML::DoubleQuoted;
        out << key << YAML::Value;
        emit_yaml(out, value.at(key));
      }
      out << YAML::EndMap;
      break;
    }
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const json& item : value) emit_yaml(out, item);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      if (yaml_would_misread(text)) out << YAML::DoubleQuoted;
      out << text;
      break;
    }
    case json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      break;
    case json::value_t::number_integer:
      out << value.get<std::int64_t>();
      break;
    case json::value_t::number_unsigned:
      out << value.get<std::uint64_t>();
      break;
    case json::value_t::number_float:
      out << value.get<double>();
      break;
    default:
      out << YAML::Null;
      break;
  }
}

// Prefixes each error of document `index` with "[index]".
void append_indexed(std::vector<FieldError>& errors, std::size_t index,
                    const std::vector<FieldError>& document_errors) {
  const std::string prefix = "[" + std::to_string(index) + "]";
  for (const FieldError& error : document_errors) {
    errors.push_back({.field = error.field.empty() ? prefix : prefix + "." + error.field,
                      .message = error.message});
  }
}

}  // namespace

// lease_tokens / lease_period (docs/defences.md "Token leasing for hot keys").
void read_lease_fields(FieldReader& r, Policy& policy) {
  policy.lease_tokens = r.integer("lease_tokens", false).value_or(0);
  policy.lease_period = r.duration("lease_period", false).value_or(kDefaultLeasePeriod);
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
  policy.description = r.string("description", false).value_or("");
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
  if (const json* section = r.find("descriptors", false)) {
    policy.descriptors = descriptor_section_from_json(*section, "descriptors", errors);
  }
  const bool unlimited = policy.descriptors && policy.descriptors->unlimited;
  if (unlimited) {
    // Envoy's `unlimited: true` node: matched, never limited, so limits would never apply.
    if (const json* limits = r.find("limits", false);
        limits != nullptr && !(limits->is_array() && limits->empty())) {
      r.fail("limits", "must be absent (or empty) when descriptors.unlimited is true");
    }
  } else if (const json* limits = r.find("limits", true)) {
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
  policy.max_debt = r.integer("max_debt", false).value_or(0);
  {
    std::vector<FieldError> invalid =
        algorithm::validate_max_debt(policy.max_debt, policy.limits, options.limits);
    errors.insert(errors.end(), invalid.begin(), invalid.end());
  }
  read_defence_fields(document, policy, errors);
  read_lease_fields(r, policy);
  if (const json* penalty = r.find("penalty", false)) {
    policy.penalty = penalty_from_json(*penalty, errors);
  }
  if (const json* jitter = r.find("retry_jitter", false)) {
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
    policy.version = r.integer("version", false).value_or(0);
    policy.created_by = r.string("created_by", false).value_or("");
    policy.updated_by = r.string("updated_by", false).value_or("");
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

ParsedPolicy policy_from_text(std::string_view text, const DocumentOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
      return {.errors = {{.field = "", .message = "not valid JSON"}}};
    }
    return policy_from_json(document, options);
  }
  StatusOr<std::vector<YAML::Node>> documents = load_yaml_documents(text);
  if (!documents.ok()) return {.errors = {{.field = "", .message = documents.status().message()}}};
  std::size_t budget = kMaxYamlValues;
  const StatusOr<json> document =
      yaml_to_json(documents->empty() ? YAML::Node() : documents->front(), budget);
  if (!document.ok()) return {.errors = {{.field = "", .message = document.status().message()}}};
  return policy_from_json(*document, options);
}

ParsedPolicies policies_from_text(std::string_view text, const DocumentOptions& options) {
  ParsedPolicies result;
  std::vector<json> documents;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    result.errors.push_back({.field = "", .message = "no policy documents found"});
    return result;
  }
  if (text[first] == '{' || text[first] == '[') {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      result.errors.push_back({.field = "", .message = "not valid JSON"});
      return result;
    }
    documents.push_back(std::move(parsed));
  } else {
    StatusOr<std::vector<YAML::Node>> nodes = load_yaml_documents(text);
    if (!nodes.ok()) {
      result.errors.push_back({.field = "", .message = nodes.status().message()});
      return result;
    }
    std::size_t budget = kMaxYamlValues;
    for (const YAML::Node& node : *nodes) {
      StatusOr<json> document = yaml_to_json(node, budget);
      if (!document.ok()) {
        result.errors.push_back({.field = "", .message = document.status().message()});
        return result;
      }
      documents.push_back(std::move(*document));
    }
  }
  if (documents.empty()) {
    result.errors.push_back({.field = "", .message = "no policy documents found"});
    return result;
  }
  // One document holding a list: the list is the policies.
  if (documents.size() == 1 && documents.front().is_array()) {
    json list = std::move(documents.front());
    documents.assign(list.begin(), list.end());
  }
  std::map<std::string, std::size_t, std::less<>> first_index;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    ParsedPolicy parsed = policy_from_json(documents[i], options);
    append_indexed(result.errors, i, parsed.errors);
    if (!parsed.policy) continue;
    const auto [it, inserted] = first_index.emplace(parsed.policy->name, i);
    if (!inserted) {
      append_indexed(
          result.errors, i,
          {{.field = "name",
            .message = "duplicates the policy of document [" + std::to_string(it->second) + "]"}});
      continue;
    }
    result.policies.push_back(std::move(*parsed.policy));
  }
  if (!result.errors.empty()) result.policies.clear();
  return result;
}

std::string json_to_yaml(const json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_yaml(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

json limit_to_json(const Limit& limit) {
  const algorithm::Algorithm& row = algorithm::algorithm_of(limit);
  json out = {{"algorithm", row.name}};
  const auto values = algorithm::parameter_values(limit);
  for (std::size_t i = 0; i < row.parameters.size(); ++i) {
    const algorithm::Parameter& parameter = row.parameters[i];
    if (!values[i]) continue;  // an optional parameter left unset
    const std::string name(parameter.name);
    switch (parameter.type) {
      case algorithm::ParameterType::kCount:
        out[name] = *values[i];
        break;
      case algorithm::ParameterType::kDuration:
        out[name] = format_duration(*values[i]);
        break;
      case algorithm::ParameterType::kChoice:
        out[name] = parameter.choices[static_cast<std::size_t>(*values[i])];
        break;
    }
  }
  if (const algorithm::Calendar* calendar = algorithm::calendar_of(limit)) {
    calendar_to_json(*calendar, out);
  }
  return out;
}

json policy_to_json(const Policy& policy) {
  json limits = json::array();
  for (const Limit& limit : policy.limits) limits.push_back(limit_to_json(limit));
  json document = {{"name", policy.name},
                   {"description", policy.description},
                   {"apps", policy.apps},
                   {"mode", mode_name(policy.mode)},
                   {"on_store_failure", failure_mode_name(policy.on_store_failure)},
                   {"enabled", policy.enabled},
                   {"limits", limits},
                   {"version", policy.version},
                   {"created_by", policy.created_by},
                   {"updated_by", policy.updated_by},
                   {"created_at", policy.created_at},
                   {"updated_at", policy.updated_at}};
  if (policy.descriptors) document["descriptors"] = descriptor_section_to_json(*policy.descriptors);
  // Only when set, so documents of policies that never charge stay as they were.
  if (policy.max_debt != 0) document["max_debt"] = policy.max_debt;
  write_defence_fields(policy, document);
  if (policy.lease_tokens != 0) document["lease_tokens"] = policy.lease_tokens;
  if (policy.lease_period != kDefaultLeasePeriod) {
    document["lease_period"] = format_duration(policy.lease_period);
  }
  if (policy.penalty) document["penalty"] = penalty_to_json(*policy.penalty);
  if (policy.retry_jitter_percent != 0) {
    document["retry_jitter"] = std::to_string(policy.retry_jitter_percent) + "%";
  }
  return document;
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
