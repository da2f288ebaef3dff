// Percent-encoding (RFC 3986 §2.1) of one URL component: encoding for building database URLs and
// SOCI connection strings from parts that may hold any bytes (passwords with '@', ':' or '/'), and
// the two ways Sluice decodes — strictly for the URLs a user configures (a bad escape is an error),
// leniently for request paths and query strings (a bad escape is kept as text).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice {

// Every byte except the unreserved ones (A-Z a-z 0-9 - _ . ~) as %XX, upper-case hex.
std::string percent_encode(std::string_view text);

// Each %XX as its byte; std::nullopt when a '%' is not followed by two hex digits. '+' is '+'.
std::optional<std::string> percent_decode(std::string_view text);

// What '+' stands for when decoding leniently.
enum class PlusSign {
  kLiteral,  // a path segment: '+' is '+'
  kSpace,    // application/x-www-form-urlencoded (query strings): '+' is ' '
};

// Each %XX as its byte; a '%' not followed by two hex digits stays as it is.
std::string percent_decode_lenient(std::string_view text, PlusSign plus = PlusSign::kLiteral);

}  // namespace sluice
