// Percent-encoding (RFC 3986 §2.1) of one URL component, for building database URLs and SOCI
// connection strings from parts that may hold any bytes (passwords with '@', ':' or '/').
#pragma once

#include <string>
#include <string_view>

namespace sluice {

// Every byte except the unreserved ones (A-Z a-z 0-9 - _ . ~) as %XX, upper-case hex.
std::string percent_encode(std::string_view text);

}  // namespace sluice
