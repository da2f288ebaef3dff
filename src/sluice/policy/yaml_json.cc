#include "sluice/policy/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <nlohmann/json.hpp>
#include <vector>

#include "sluice/core/status_macros.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

bool is_decimal_integer(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
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

}  // namespace

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

std::string json_to_yaml(const json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  emit_yaml(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text.push_back('\n');
  return text;
}

}  // namespace sluice::policy
