#include "sluice/simulate/json_fields.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

namespace sluice::simulate {
namespace {

using nlohmann::json;

// The SAX handler: tracks the member path to the value being read and keeps the values whose
// path is one of the map's.
class Extractor {
 public:
  Extractor(const FieldMap& map, JsonFields& out) : map_(map), out_(out) {}

  bool null() { return value(JsonValue::Kind::kNull); }
  bool boolean(bool) { return value(JsonValue::Kind::kOther); }
  bool number_integer(json::number_integer_t v) {
    if (JsonValue* slot = target()) {
      slot->kind = JsonValue::Kind::kInteger;
      slot->integer = v;
    }
    return after_value();
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (v > static_cast<json::number_unsigned_t>(std::numeric_limits<std::int64_t>::max())) {
      return value(JsonValue::Kind::kOther);
    }
    return number_integer(static_cast<json::number_integer_t>(v));
  }
  bool number_float(json::number_float_t, const json::string_t&) {
    return value(JsonValue::Kind::kOther);
  }
  bool string(json::string_t& v) {
    if (JsonValue* slot = target()) {
      slot->kind = JsonValue::Kind::kString;
      slot->text.swap(v);
    }
    return after_value();
  }
  bool binary(json::binary_t&) { return value(JsonValue::Kind::kOther); }

  bool start_object(std::size_t) {
    if (containers_.empty()) {
      top_object_ = true;
    } else if (JsonValue* slot = target()) {
      slot->kind = JsonValue::Kind::kOther;  // a mapped path that holds an object
    }
    containers_.push_back(kObject);
    path_.emplace_back();
    return true;
  }
  bool key(json::string_t& k) {
    path_.back().swap(k);
    return true;
  }
  bool end_object() {
    containers_.pop_back();
    path_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    if (containers_.empty()) {
      top_object_ = false;
    } else if (JsonValue* slot = target()) {
      slot->kind = JsonValue::Kind::kOther;
    }
    containers_.push_back(kArray);
    return true;
  }
  bool end_array() {
    containers_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

  bool top_object() const { return top_object_; }

 private:
  static constexpr char kObject = 'o';
  static constexpr char kArray = 'a';

  bool value(JsonValue::Kind kind) {
    if (JsonValue* slot = target()) slot->kind = kind;
    return after_value();
  }
  static bool after_value() { return true; }

  // The output slot of the value about to be read, or null when its path is not mapped.
  JsonValue* target() {
    if (containers_.empty() || containers_.back() != kObject) return nullptr;
    // Every container on the way must be an object for a member path to reach here.
    for (const char c : containers_) {
      if (c != kObject) return nullptr;
    }
    if (matches(map_.time)) return &out_.time;
    if (matches(map_.key)) return &out_.key;
    if (matches(map_.cost)) return &out_.cost;
    if (matches(map_.app)) return &out_.app;
    if (matches(map_.policy)) return &out_.policy;
    return nullptr;
  }
  bool matches(const std::vector<std::string>& want) const {
    if (want.size() != path_.size()) return false;
    for (std::size_t i = want.size(); i-- > 0;) {  // the last member differs most often
      if (want[i] != path_[i]) return false;
    }
    return true;
  }

  const FieldMap& map_;
  JsonFields& out_;
  std::string containers_;
  std::vector<std::string> path_;  // the member name at each object level
  bool top_object_ = false;
};

}  // namespace

JsonShape extract_fields(std::string_view line, const FieldMap& map, JsonFields& out) {
  out.time.kind = out.key.kind = out.cost.kind = out.app.kind = out.policy.kind =
      JsonValue::Kind::kAbsent;
  Extractor extractor(map, out);
  if (!json::sax_parse(line.begin(), line.end(), &extractor)) return JsonShape::kNotJson;
  return extractor.top_object() ? JsonShape::kObject : JsonShape::kNotObject;
}

}  // namespace sluice::simulate
