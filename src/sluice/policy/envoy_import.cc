#include "sluice/policy/envoy_import.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <string>

#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/policy/yaml_text.h"

namespace sluice::policy {
namespace {

// Far more than any real configuration (envoyproxy/ratelimit's largest examples hold dozens).
constexpr std::size_t kMaxDescriptors = 100'000;

struct Unit {
  std::string_view name;
  Micros window;
};

constexpr std::array<Unit, 7> kUnits = {{
    {"second", kMicrosPerSecond},
    {"minute", kMicrosPerMinute},
    {"hour", kMicrosPerHour},
    {"day", kMicrosPerDay},
    {"week", 7 * kMicrosPerDay},
    {"month", 30 * kMicrosPerDay},  // envoyproxy/ratelimit's divider for MONTH
    {"year", 365 * kMicrosPerDay},
}};

// The unit named `text` (any case, as envoyproxy/ratelimit upper-cases it), or null.
const Unit* find_unit(std::string_view text) {
  std::string wanted;
  for (const char c : text) {
    wanted.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  const auto it =
      std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == wanted; });
  return it == kUnits.end() ? nullptr : &*it;
}

// Every character outside the policy-name alphabet becomes '_'.
std::string sanitize(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!allowed) c = '_';
  }
  return out;
}

class Converter {
 public:
  Converter(EnvoyImport& result, std::string prefix, EnvoyImportOptions options)
      : result_(result), prefix_(std::move(prefix)), options_(options) {}

  void convert_root(const YAML::Node& root, std::map<std::string, std::string>& names,
                    std::size_t& descriptors_seen) {
    names_ = &names;
    descriptors_seen_ = &descriptors_seen;
    if (!root.IsMap()) {
      error("", "an envoy ratelimit config must be a map with \"domain\" and \"descriptors\"");
      return;
    }
    reject_unknown(root, "", {"domain", "descriptors"});
    const std::optional<std::string> domain = scalar(root, "", "domain", /*required=*/true);
    if (!domain) return;
    if (domain->empty()) {
      error("domain", "must not be empty");
      return;
    }
    domain_ = *domain;
    app_ = sanitize(*domain);
    if (!is_valid_policy_name(app_)) {
      error("domain", "becomes the app \"" + app_ + "\", which is longer than " +
                          std::to_string(kMaxPolicyNameBytes) + " characters");
      return;
    }
    const YAML::Node descriptors = root["descriptors"];
    if (!descriptors.IsDefined() || descriptors.IsNull()) {
      warn("descriptors", "missing: the domain has no descriptors, nothing to import");
      return;
    }
    convert_list(descriptors, "descriptors", app_, "", {});
  }

 private:
  std::string field(std::string_view path) const {
    if (prefix_.empty()) return std::string(path);
    return path.empty() ? prefix_ : prefix_ + "." + std::string(path);
  }
  void error(std::string_view path, std::string message) {
    result_.errors.push_back({.field = field(path), .message = std::move(message)});
  }
  void warn(std::string_view path, std::string message) {
    result_.warnings.push_back({.field = field(path), .message = std::move(message)});
  }
  static std::string join(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : std::string(path) + "." + std::string(key);
  }

  // An unknown field is an error: envoyproxy/ratelimit refuses the whole file for one too, and
  // one left out could change what the file means (a newer field this import does not know).
  void reject_unknown(const YAML::Node& map, std::string_view path,
                      std::initializer_list<std::string_view> known) {
    for (const auto& item : map) {
      if (!item.first.IsScalar()) {
        error(path, "has a key that is not a string");
        continue;
      }
      const std::string& key = item.first.Scalar();
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        error(join(path, key), "unknown field (envoyproxy/ratelimit refuses it too)");
      }
    }
  }

  std::optional<std::string> scalar(const YAML::Node& map, std::string_view path,
                                    std::string_view key, bool required) {
    const YAML::Node node = map[std::string(key)];
    if (!node.IsDefined() || node.IsNull()) {
      if (required) error(join(path, key), "is required");
      return std::nullopt;
    }
    if (!node.IsScalar()) {
      error(join(path, key), "must be a string");
      return std::nullopt;
    }
    return node.Scalar();
  }

  std::optional<bool> boolean(const YAML::Node& map, std::string_view path, std::string_view key) {
    const YAML::Node node = map[std::string(key)];
    if (!node.IsDefined() || node.IsNull()) return std::nullopt;
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      error(join(path, key), "must be true or false");
      return std::nullopt;
    }
    return value;
  }

  void convert_list(const YAML::Node& list, const std::string& path, const std::string& name,
                    const std::string& described, const std::vector<DescriptorEntry>& entries) {
    if (!list.IsSequence()) {
      error(path, "must be a list of descriptors");
      return;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      convert_descriptor(list[i], path + "[" + std::to_string(i) + "]", name, described, entries);
    }
  }

  // `parent_name` is the policy name of the enclosing level ("<app>" at the top), `described`
  // the human-readable path ("database=users"), `parent_entries` the descriptor path above.
  void convert_descriptor(const YAML::Node& node, const std::string& path,
                          const std::string& parent_name, const std::string& parent_described,
                          const std::vector<DescriptorEntry>& parent_entries) {
    // YAML aliases let a few bytes name a descriptor list many times over, level after level.
    if (++*descriptors_seen_ > kMaxDescriptors) {
      if (*descriptors_seen_ == kMaxDescriptors + 1) {
        error(path, "more than " + std::to_string(kMaxDescriptors) +
                        " descriptors once YAML aliases are expanded");
      }
      return;
    }
    if (!node.IsMap()) {
      error(path,
            "must be a map with \"key\" and optionally \"value\", \"rate_limit\", "
            "\"descriptors\"");
      return;
    }
    reject_unknown(node, path,
                   {"key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric",
                    "value_to_metric", "share_threshold", "quota_mode", "metadata"});
    const std::optional<std::string> key = scalar(node, path, "key", /*required=*/true);
    if (!key) return;
    if (key->empty()) {
      error(join(path, "key"), "must not be empty");
      return;
    }
    const std::string value = scalar(node, path, "value", /*required=*/false).value_or("");
    if (key->size() > kMaxDescriptorTextBytes || value.size() > kMaxDescriptorTextBytes) {
      error(path, "key and value must be at most " + std::to_string(kMaxDescriptorTextBytes) +
                      " bytes each");
      return;
    }
    std::vector<DescriptorEntry> entries = parent_entries;
    // envoyproxy/ratelimit: no value (or an empty one) matches the key with any value.
    entries.push_back(
        {.key = *key, .value = value.empty() ? std::nullopt : std::optional<std::string>(value)});
    if (entries.size() > kMaxDescriptorDepth) {
      error(path, "nested deeper than " + std::to_string(kMaxDescriptorDepth) + " levels");
      return;
    }
    if (boolean(node, path, "share_threshold").value_or(false)) {
      // As envoyproxy/ratelimit, which refuses the file otherwise.
      if (!value.ends_with('*')) {
        error(join(path, "share_threshold"),
              "can only be used with a wildcard value ending with '*' (got \"" + value + "\")");
      }
      entries.back().shared = true;
    }
    const bool detailed_metric = boolean(node, path, "detailed_metric").value_or(false);
    const std::string segment = value.empty() ? *key : *key + "_" + value;
    const std::string name = parent_name + "." + sanitize(segment);
    const std::string described = (parent_described.empty() ? "" : parent_described + ", ") +
                                  (value.empty() ? *key + " (any value)" : *key + "=" + value);

    const YAML::Node rate_limit = node["rate_limit"];
    const YAML::Node children = node["descriptors"];
    const bool has_rate_limit = rate_limit.IsDefined() && !rate_limit.IsNull();
    const bool has_children = children.IsDefined() && !children.IsNull();
    bool shadow = boolean(node, path, "shadow_mode").value_or(false);
    if (detailed_metric) {
      warn(join(path, "detailed_metric"),
           "kept in the policy's descriptors section, but Sluice's metrics stay per policy: no "
           "per-value series");
    }
    if (boolean(node, path, "value_to_metric").value_or(false)) {
      warn(join(path, "value_to_metric"),
           "not imported: Sluice's metrics stay per policy, so the matched values appear in no "
           "metric name (answers are unchanged)");
    }
    if (boolean(node, path, "quota_mode").value_or(false)) {
      warn(join(path, "quota_mode"),
           "imported as mode: shadow: an exceeded limit answers OK and is counted, but no "
           "quotaModeViolations entry is set in dynamic_metadata for the proxy to act on");
      shadow = true;
    }
    if (node["metadata"].IsDefined() && !node["metadata"].IsNull()) {
      warn(join(path, "metadata"),
           "dropped: envoyproxy/ratelimit sends it only in dynamic_metadata (with "
           "RESPONSE_DYNAMIC_METADATA=true), which Sluice does not set");
    }
    if (has_rate_limit) {
      convert_rate_limit(rate_limit, join(path, "rate_limit"), name, described, shadow,
                         DescriptorSection{.entries = entries,
                                           .detailed_metric = detailed_metric,
                                           .answers = DescriptorAnswers::kEnvoy});
    } else if (shadow) {
      warn(join(path, "shadow_mode"), "not represented: it has no effect without a rate_limit");
    }
    if (has_children) {
      convert_list(children, join(path, "descriptors"), name, described, entries);
    } else if (!has_rate_limit) {
      warn(path, "has neither rate_limit nor descriptors: nothing to import");
    }
  }

  // rate_limit.replaces: a list of {name}; every name non-empty and not the limit's own.
  std::vector<std::string> read_replaces(const YAML::Node& node, const std::string& path,
                                         const std::string& own_name) {
    std::vector<std::string> names;
    const YAML::Node replaces = node["replaces"];
    if (!replaces.IsDefined() || replaces.IsNull()) return names;
    if (!replaces.IsSequence()) {
      error(join(path, "replaces"), "must be a list of {name: <rate limit name>}");
      return names;
    }
    for (std::size_t i = 0; i < replaces.size(); ++i) {
      const std::string at = join(path, "replaces") + "[" + std::to_string(i) + "]";
      if (!replaces[i].IsMap()) {
        error(at, "must be a map {name: <rate limit name>}");
        continue;
      }
      reject_unknown(replaces[i], at, {"name"});
      const std::optional<std::string> replaced = scalar(replaces[i], at, "name", false);
      if (!replaced || replaced->empty()) {
        error(join(at, "name"), "must not be empty (envoyproxy/ratelimit refuses it too)");
      } else if (*replaced == own_name) {
        error(join(at, "name"), "must not name this rate limit's own name");
      } else {
        names.push_back(*replaced);
      }
    }
    return names;
  }

  void convert_rate_limit(const YAML::Node& node, const std::string& path, const std::string& name,
                          const std::string& described, bool shadow, DescriptorSection section) {
    if (!node.IsMap()) {
      error(path, "must be a map with \"unit\" and \"requests_per_unit\"");
      return;
    }
    reject_unknown(node, path,
                   {"unit", "requests_per_unit", "unlimited", "name", "replaces", "metadata"});
    const std::optional<std::string> limit_name = scalar(node, path, "name", false);
    if (node["metadata"].IsDefined() && !node["metadata"].IsNull()) {
      warn(join(path, "metadata"),
           "dropped: envoyproxy/ratelimit sends it only in dynamic_metadata (with "
           "RESPONSE_DYNAMIC_METADATA=true), which Sluice does not set");
    }
    const std::size_t errors_before = result_.errors.size();
    section.limit_name = limit_name.value_or("");
    section.replaces = read_replaces(node, path, section.limit_name);
    const std::optional<std::string> unit = scalar(node, path, "unit", false);
    if (boolean(node, path, "unlimited").value_or(false)) {
      if (unit && find_unit(*unit) != nullptr) {
        error(join(path, "unit"),
              "must not be set when unlimited is true (envoyproxy/ratelimit "
              "refuses it too)");
      }
      if (result_.errors.size() != errors_before) return;
      section.unlimited = true;
      add_policy(path, name, described, limit_name, shadow, std::move(section), {});
      return;
    }
    std::optional<Micros> window;
    if (!unit) {
      error(join(path, "unit"), "is required");
    } else if (const Unit* found = find_unit(*unit); found == nullptr) {
      error(join(path, "unit"),
            "must be one of second, minute, hour, day, week, month, year "
            "(got \"" +
                *unit + "\")");
    } else {
      // month and year: 30 and 365 days, envoyproxy/ratelimit's default dividers (its
      // USE_CALENDAR_MONTH_RATE_LIMIT is not followed: docs/envoy.md).
      window = found->window;
    }
    std::optional<std::int64_t> requests;
    if (const std::optional<std::string> text = scalar(node, path, "requests_per_unit", true)) {
      std::uint64_t parsed = 0;
      const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), parsed);
      if (text->empty() || ec != std::errc{} || end != text->data() + text->size() ||
          (text->size() > 1 && text->front() == '0')) {
        error(join(path, "requests_per_unit"),
              "must be a non-negative integer (got \"" + *text + "\")");
      } else if (parsed > UINT32_MAX) {
        error(join(path, "requests_per_unit"), "must be at most 4294967295, as in envoy");
      } else {
        requests = static_cast<std::int64_t>(parsed);
      }
    }
    if (result_.errors.size() != errors_before || !window || !requests) return;
    // 0 admits nothing whichever way denials count; counted, it answers as envoyproxy/ratelimit
    // (and a window of 0 is valid only so).
    const algorithm::DeniedCost denied_cost =
        *requests == 0 ? algorithm::DeniedCost::kCounted : options_.denied_cost;
    add_policy(path, name, described, limit_name, shadow, std::move(section),
               {algorithm::FixedWindow{
                   .limit = *requests, .window = *window, .denied_cost = denied_cost}});
  }

  // The policy of one descriptor node; `limits` empty for an unlimited one.
  void add_policy(const std::string& path, const std::string& name, const std::string& described,
                  const std::optional<std::string>& limit_name, bool shadow,
                  DescriptorSection section, std::vector<algorithm::Limit> limits) {
    const std::size_t errors_before = result_.errors.size();
    if (!is_valid_policy_name(name)) {
      error(path, "would become the policy \"" + name.substr(0, 64) + "...\", longer than " +
                      std::to_string(kMaxPolicyNameBytes) + " characters");
      return;
    }
    const auto [it, inserted] = names_->emplace(name, field(path));
    if (!inserted) {
      error(path, "would become the policy " + name + ", as " + it->second +
                      " already does (names replace characters outside [A-Za-z0-9._-] by '_')");
      return;
    }
    Policy policy;
    policy.name = name;
    policy.description = "Imported from envoyproxy/ratelimit: domain " + domain_ + ", " + described;
    if (limit_name && !limit_name->empty()) policy.description += ", rate limit " + *limit_name;
    policy.apps = {app_};
    policy.mode = shadow ? Mode::kShadow : Mode::kEnforce;
    policy.on_store_failure =
        FailureMode::kFailOpen;  // envoy's filter allows when the service fails
    policy.limits = std::move(limits);
    policy.descriptors = std::move(section);
    for (const algorithm::Limit& limit : policy.limits) {
      for (const FieldError& invalid : algorithm::validate_limit(limit, "")) {
        error(join(path, "requests_per_unit"), invalid.message);
      }
    }
    if (result_.errors.size() == errors_before) result_.policies.push_back(std::move(policy));
  }

  EnvoyImport& result_;
  std::string prefix_;
  EnvoyImportOptions options_;
  std::map<std::string, std::string>* names_ = nullptr;  // policy name -> field that made it
  std::size_t* descriptors_seen_ = nullptr;              // in every document so far
  std::string domain_;
  std::string app_;
};

}  // namespace

EnvoyImport import_envoy_config(std::string_view yaml_text, EnvoyImportOptions options) {
  EnvoyImport result;
  StatusOr<std::vector<YAML::Node>> loaded = load_yaml_documents(yaml_text);
  if (!loaded.ok()) {
    result.errors.push_back({.field = "", .message = loaded.status().message()});
    return result;
  }
  const std::vector<YAML::Node>& documents = *loaded;
  if (documents.empty()) {
    result.errors.push_back({.field = "", .message = "empty: no envoy ratelimit config found"});
    return result;
  }
  std::map<std::string, std::string> names;
  std::size_t descriptors_seen = 0;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    Converter converter(result, documents.size() == 1 ? "" : "[" + std::to_string(i) + "]",
                        options);
    converter.convert_root(documents[i], names, descriptors_seen);
  }
  if (!result.errors.empty()) result.policies.clear();
  return result;
}

}  // namespace sluice::policy
