#include "sluice/server/http/json_fields.h"

namespace sluice::http {

using nlohmann::json;

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view json_type(const json& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return "a boolean";
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

void read_string(const json& body, std::string_view field, std::string& out, bool allow_empty,
                 std::vector<FieldError>& errors) {
  const auto it = body.find(field);
  if (it == body.end()) {
    errors.push_back({std::string(field), "is required"});
  } else if (!it->is_string()) {
    errors.push_back({std::string(field), "must be a string, not " + std::string(json_type(*it))});
  } else {
    out = it->get<std::string>();
    if (!allow_empty && out.empty()) errors.push_back({std::string(field), "must not be empty"});
  }
}

void read_integer(const json& body, std::string_view field, std::int64_t min, std::int64_t max,
                  std::int64_t& out, std::vector<FieldError>& errors) {
  const auto it = body.find(field);
  if (it == body.end()) return;
  const std::string range = "between " + std::to_string(min) + " and " + std::to_string(max);
  if (it->is_number_unsigned()) {
    const auto value = it->get<std::uint64_t>();
    if (value > static_cast<std::uint64_t>(max)) {
      errors.push_back({std::string(field), "must be " + range});
    } else {
      out = static_cast<std::int64_t>(value);
    }
  } else if (it->is_number_integer()) {
    const auto value = it->get<std::int64_t>();
    if (value < min || value > max) {
      errors.push_back({std::string(field), "must be " + range});
    } else {
      out = value;
    }
  } else {
    errors.push_back({std::string(field),
                      "must be an integer " + range + ", not " + std::string(json_type(*it))});
  }
}

void reject_unknown(const json& body, std::initializer_list<std::string_view> known,
                    std::vector<FieldError>& errors) {
  for (const auto& [name, value] : body.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == name;
    if (!found) errors.push_back({name, "unknown field"});
  }
}

void read_optional_string(const json& body, std::string_view field, std::string& out,
                          std::vector<FieldError>& errors) {
  const auto it = body.find(field);
  if (it == body.end()) return;
  if (!it->is_string()) {
    errors.push_back({std::string(field), "must be a string, not " + std::string(json_type(*it))});
    return;
  }
  out = it->get<std::string>();
}

void read_optional_bool(const json& body, std::string_view field, bool& out,
                        std::vector<FieldError>& errors) {
  const auto it = body.find(field);
  if (it == body.end()) return;
  if (!it->is_boolean()) {
    errors.push_back(
        {std::string(field), "must be true or false, not " + std::string(json_type(*it))});
    return;
  }
  out = it->get<bool>();
}

}  // namespace sluice::http
