#include "sluice/policy/descriptors.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sluice/policy/policy.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

void fail(std::vector<algorithm::FieldError>& errors, std::string field, std::string message) {
  errors.push_back({.field = std::move(field), .message = std::move(message)});
}

// A key or value as a policy may hold it: non-empty when `allow_empty` is false, bounded, and
// free of NUL (the index's separator).
bool read_text(const json& object, std::string_view name, const std::string& field,
               bool allow_empty, std::string& out, std::vector<algorithm::FieldError>& errors) {
  const auto it = object.find(name);
  if (it == object.end()) return false;
  if (!it->is_string()) {
    fail(errors, field, "must be a string");
    return false;
  }
  out = it->get<std::string>();
  if (out.empty() && !allow_empty) {
    fail(errors, field, "must not be empty");
  } else if (out.size() > kMaxDescriptorTextBytes) {
    fail(errors, field, "must be at most " + std::to_string(kMaxDescriptorTextBytes) + " bytes");
  } else if (out.find('\0') != std::string::npos) {
    fail(errors, field, "must not contain a NUL byte");
  }
  return true;
}

std::string index_key(std::string_view key, const std::optional<std::string>& value) {
  std::string out(key);
  if (value) out.append(1, '\0').append(*value);
  return out;
}

}  // namespace

std::optional<DescriptorSection> descriptor_section_from_json(
    const json& section, const std::string& prefix, std::vector<algorithm::FieldError>& errors) {
  const std::size_t before = errors.size();
  if (!section.is_object()) {
    fail(errors, prefix,
         "must be an object with `entries` (and optionally `unlimited`, "
         "`detailed_metric`)");
    return std::nullopt;
  }
  DescriptorSection out;
  for (const auto& [key, value] : section.items()) {
    if (key != "entries" && key != "unlimited" && key != "detailed_metric" &&
        key != "allow_override" && key != "charge" && key != "name" && key != "replaces" &&
        key != "answers") {
      fail(errors, prefix + "." + key, "unknown field for descriptors");
    }
  }
  for (const auto& [flag, target] : {std::pair<const char*, bool*>{"unlimited", &out.unlimited},
                                     {"detailed_metric", &out.detailed_metric},
                                     {"allow_override", &out.allow_override},
                                     {"charge", &out.charge}}) {
    const auto it = section.find(flag);
    if (it == section.end()) continue;
    if (!it->is_boolean()) {
      fail(errors, prefix + "." + flag, "must be true or false");
      continue;
    }
    *target = it->get<bool>();
  }
  const auto entries = section.find("entries");
  if (entries == section.end()) {
    fail(errors, prefix + ".entries", "is required");
  } else if (!entries->is_array() || entries->empty() || entries->size() > kMaxDescriptorDepth) {
    fail(errors, prefix + ".entries",
         "must be a list of 1 to " + std::to_string(kMaxDescriptorDepth) +
             " entries ({key, value?}), the path from the domain's root");
  } else {
    for (std::size_t i = 0; i < entries->size(); ++i) {
      const std::string field = prefix + ".entries[" + std::to_string(i) + "]";
      const json& entry = (*entries)[i];
      if (!entry.is_object()) {
        fail(errors, field, "must be an object {key, value?}");
        continue;
      }
      for (const auto& [key, value] : entry.items()) {
        if (key != "key" && key != "value" && key != "shared") {
          fail(errors, field + "." + key, "unknown field");
        }
      }
      DescriptorEntry read;
      if (!read_text(entry, "key", field + ".key", false, read.key, errors) &&
          !entry.contains("key")) {
        fail(errors, field + ".key", "is required");
      }
      std::string value;
      // An empty value is a value Envoy can send; only an absent one means "any value".
      if (read_text(entry, "value", field + ".value", true, value, errors)) read.value = value;
      if (const auto shared = entry.find("shared"); shared != entry.end()) {
        if (!shared->is_boolean()) {
          fail(errors, field + ".shared", "must be true or false");
        } else if (shared->get<bool>() && !(read.value && is_wildcard(*read.value))) {
          fail(errors, field + ".shared",
               "needs a wildcard value (one holding '*'): only a wildcard's values can share");
        } else {
          read.shared = shared->get<bool>();
        }
      }
      out.entries.push_back(std::move(read));
    }
  }
  if (section.contains("name")) {
    read_text(section, "name", prefix + ".name", true, out.limit_name, errors);
  }
  if (const auto replaces = section.find("replaces"); replaces != section.end()) {
    if (!replaces->is_array()) {
      fail(errors, prefix + ".replaces", "must be a list of limit names");
    } else {
      for (std::size_t i = 0; i < replaces->size(); ++i) {
        const std::string field = prefix + ".replaces[" + std::to_string(i) + "]";
        const json& name = (*replaces)[i];
        if (!name.is_string() || name.get<std::string>().empty()) {
          fail(errors, field, "must be a non-empty limit name");
        } else if (name.get<std::string>() == out.limit_name) {
          fail(errors, field, "must not name this path's own limit");
        } else {
          out.replaces.push_back(name.get<std::string>());
        }
      }
    }
  }
  if (const auto answers = section.find("answers"); answers != section.end()) {
    if (*answers == "envoy") {
      out.answers = DescriptorAnswers::kEnvoy;
    } else if (*answers != "sluice") {
      fail(errors, prefix + ".answers", "must be \"sluice\" or \"envoy\"");
    }
  }
  if (out.charge && out.unlimited) {
    fail(errors, prefix + ".charge",
         "cannot be true with unlimited (there is no budget to charge)");
  }
  if (out.charge && out.allow_override) {
    fail(errors, prefix + ".charge",
         "cannot be true with allow_override (an override is decided before the work, a charge "
         "after it)");
  }
  if (errors.size() != before) return std::nullopt;
  return out;
}

json descriptor_section_to_json(const DescriptorSection& section) {
  json entries = json::array();
  for (const DescriptorEntry& entry : section.entries) {
    json item = {{"key", entry.key}};
    if (entry.value) item["value"] = *entry.value;
    if (entry.shared) item["shared"] = true;
    entries.push_back(std::move(item));
  }
  json out = {{"entries", std::move(entries)}};
  if (section.unlimited) out["unlimited"] = true;
  if (section.detailed_metric) out["detailed_metric"] = true;
  if (section.allow_override) out["allow_override"] = true;
  if (section.charge) out["charge"] = true;
  if (!section.limit_name.empty()) out["name"] = section.limit_name;
  if (!section.replaces.empty()) out["replaces"] = section.replaces;
  if (section.answers == DescriptorAnswers::kEnvoy) out["answers"] = "envoy";
  return out;
}

namespace {

// Whether some value satisfies both level values (absent, a wildcard or exact). Two wildcards
// are compared by what precedes their first '*' (exact for "prefix*" patterns; for patterns
// with a '*' inside, "may overlap" when those prefixes agree).
bool values_overlap(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  if (!a || !b) return true;
  const bool a_wild = is_wildcard(*a);
  const bool b_wild = is_wildcard(*b);
  if (a_wild && !b_wild) return wildcard_matches(*a, *b);
  if (b_wild && !a_wild) return wildcard_matches(*b, *a);
  if (!a_wild) return *a == *b;
  const std::string_view a_text = std::string_view(*a).substr(0, a->find('*'));
  const std::string_view b_text = std::string_view(*b).substr(0, b->find('*'));
  return a_text.starts_with(b_text) || b_text.starts_with(a_text);
}

}  // namespace

bool descriptor_paths_overlap(const std::vector<DescriptorEntry>& a,
                              const std::vector<DescriptorEntry>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].key != b[i].key || !values_overlap(a[i].value, b[i].value)) return false;
  }
  return true;
}

bool is_wildcard(std::string_view value) { return value.find('*') != std::string_view::npos; }

bool wildcard_matches(std::string_view pattern, std::string_view value) {
  std::size_t p = 0;
  std::size_t v = 0;
  std::size_t star = std::string_view::npos;  // the last '*' seen in the pattern
  std::size_t resume = 0;                     // where its run of characters ends so far
  while (v < value.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = v;
    } else if (p < pattern.size() && pattern[p] == value[v]) {
      ++p;
      ++v;
    } else if (star != std::string_view::npos) {
      p = star + 1;  // the last '*' takes one more character
      v = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string descriptor_subject_of_values(const std::vector<std::string_view>& values) {
  std::string subject;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) subject.push_back('|');
    for (const char c : values[i]) {
      if (c == '\\' || c == '|') subject.push_back('\\');
      subject.push_back(c);
    }
  }
  return subject;
}

std::string descriptor_subject(const std::vector<RequestEntry>& entries) {
  std::vector<std::string_view> values;
  values.reserve(entries.size());
  for (const RequestEntry& entry : entries) values.push_back(entry.value);
  return descriptor_subject_of_values(values);
}

DescriptorIndex::DescriptorIndex(const std::vector<std::shared_ptr<const Policy>>& policies) {
  std::vector<std::shared_ptr<const Policy>> sorted;
  for (const auto& policy : policies) {
    if (policy && policy->enabled && policy->descriptors) sorted.push_back(policy);
  }
  // By name, so which of two policies on one path wins does not depend on load order.
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a->name < b->name; });
  for (const auto& policy : sorted) {
    for (const std::string& domain : policy->apps) {
      Node* node = &domains_[domain];
      for (const DescriptorEntry& entry : policy->descriptors->entries) {
        // A shared wildcard is another child than the same pattern unshared (its subjects
        // differ); both match alike, the first indexed is tried first.
        std::string key = index_key(entry.key, entry.value);
        if (entry.shared) key.append(1, '\0').append("shared");
        const bool wildcard = entry.value && is_wildcard(*entry.value);
        if (wildcard && !node->children.contains(key)) {
          node->wildcards.push_back({.key = entry.key,
                                     .pattern = *entry.value,
                                     .index_key = key,
                                     .shared = entry.shared});
        }
        node = &node->children[key];
      }
      if (node->policy) {
        conflicts_.push_back("policy " + policy->name + ": same descriptor path as policy " +
                             node->policy->name + " in domain " + domain + "; ignored there");
        continue;
      }
      node->policy = policy;
    }
  }
}

const std::shared_ptr<const Policy>* DescriptorIndex::match_in(
    const Node& root, const std::vector<RequestEntry>& entries,
    std::vector<std::string_view>& values) {
  const Node* node = &root;
  std::string key;
  values.clear();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    // A NUL in a request key could reach a value-match child's index key; no policy key has one.
    if (entries[i].key.find('\0') != std::string_view::npos) return nullptr;
    key.assign(entries[i].key).append(1, '\0').append(entries[i].value);
    values.push_back(entries[i].value);
    auto it = node->children.find(key);
    if (it == node->children.end()) {
      // envoyproxy/ratelimit: an exact value first, then the first wildcard that fits.
      for (const Wildcard& wildcard : node->wildcards) {
        if (wildcard.key == entries[i].key &&
            wildcard_matches(wildcard.pattern, entries[i].value)) {
          it = node->children.find(wildcard.index_key);
          if (wildcard.shared) values.back() = wildcard.pattern;
          break;
        }
      }
    }
    if (it == node->children.end()) it = node->children.find(std::string(entries[i].key));
    if (it == node->children.end()) return nullptr;
    node = &it->second;
    // As envoyproxy/ratelimit: a limit counts only at the descriptor's own depth.
    if (i + 1 == entries.size()) return node->policy ? &node->policy : nullptr;
    if (node->children.empty()) return nullptr;
  }
  return nullptr;
}

std::optional<DescriptorMatch> DescriptorIndex::match(
    std::string_view domain, const std::vector<RequestEntry>& entries) const {
  if (entries.empty()) return std::nullopt;
  const std::shared_ptr<const Policy>* found = nullptr;
  std::vector<std::string_view> values;
  if (const auto it = domains_.find(std::string(domain)); it != domains_.end()) {
    found = match_in(it->second, entries, values);
  }
  if (found == nullptr && domain != "*") {
    if (const auto it = domains_.find("*"); it != domains_.end()) {
      found = match_in(it->second, entries, values);
    }
  }
  if (found == nullptr) return std::nullopt;
  return DescriptorMatch{.policy = *found, .subject = descriptor_subject_of_values(values)};
}

}  // namespace sluice::policy
