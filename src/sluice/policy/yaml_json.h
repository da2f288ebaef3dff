// The JSON model of a document and its YAML text: YAML nodes read into JSON under the YAML 1.2
// core schema (with a bound on what aliases may expand to), and JSON written back as block-style
// YAML that every YAML reader takes for the same values. Policy documents, their history and
// `sluice policy export` use it; yaml_text.h reads the text into nodes.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace YAML {
class Node;
}  // namespace YAML

namespace sluice::policy {

// YAML aliases share a node, and JSON copies it: `b: [*a, *a]` doubles `a`, so a few hundred
// bytes of nested aliases expand to gigabytes. A conversion stops past this many values, far
// more than any policy file holds (500 policies of a few limits are ~20 000).
inline constexpr std::size_t kMaxYamlValues = 200'000;

// Converts one YAML node; `budget` is the number of values still allowed (start with
// kMaxYamlValues; share it between the documents of one text). Strictly the YAML 1.2 core
// schema: decimal integers, true/false and null; everything else, and anything quoted, is a
// string. InvalidArgument ("not valid YAML: ...") past the budget or for a key that is not text.
StatusOr<nlohmann::json> yaml_to_json(const YAML::Node& node, std::size_t& budget);

// Block-style YAML for a JSON value. Strings YAML would read as something else ("", "true",
// "null", "0123", "42", "yes") are double-quoted, so policy_from_text / policies_from_text read
// back exactly the value written.
std::string json_to_yaml(const nlohmann::json& value);
// True when a YAML 1.1 or 1.2 reader would take `text`, written as a plain scalar, for something
// other than that string (a boolean, null, a number in any spelling, a date): json_to_yaml quotes
// it. Linear in the length of `text`.
bool yaml_would_misread(std::string_view text);

}  // namespace sluice::policy
