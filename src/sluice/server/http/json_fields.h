// Reading fields of JSON request bodies with one error per problem, each naming its field —
// shared by the decision and admin endpoints so every endpoint words its errors alike.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"

namespace sluice::http {

using algorithm::FieldError;

// Serialises without throwing (invalid UTF-8 replaced).
std::string dump_json(const nlohmann::json& value);

// "a string", "an array", "null", ... for messages.
std::string_view json_type(const nlohmann::json& value);

// A required string field (an error when missing, not a string, or empty unless allowed).
void read_string(const nlohmann::json& body, std::string_view field, std::string& out,
                 bool allow_empty, std::vector<FieldError>& errors);
// An optional string / boolean field: `out` is left alone when it is missing.
void read_optional_string(const nlohmann::json& body, std::string_view field, std::string& out,
                          std::vector<FieldError>& errors);
void read_optional_bool(const nlohmann::json& body, std::string_view field, bool& out,
                        std::vector<FieldError>& errors);
// An optional integer field in [min, max].
void read_integer(const nlohmann::json& body, std::string_view field, std::int64_t min,
                  std::int64_t max, std::int64_t& out, std::vector<FieldError>& errors);
// One "unknown field" error per member of `body` not in `known`.
void reject_unknown(const nlohmann::json& body, std::initializer_list<std::string_view> known,
                    std::vector<FieldError>& errors);

}  // namespace sluice::http
