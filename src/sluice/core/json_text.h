// Writing JSON text by hand on hot paths (the decision body, the access log line) without
// building a JSON value: one escaping rule for every writer.
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// Appends `text` as a JSON string literal, quotes included: '"' and '\' escaped, control
// characters as \n, \t, \r, \b, \f or \u00XX (as nlohmann::json writes them), well-formed UTF-8
// kept as is, and each byte of an ill-formed sequence replaced by U+FFFD (never an error: the text
// may come from a client).
void append_json_string(std::string& out, std::string_view text);

}  // namespace sluice
