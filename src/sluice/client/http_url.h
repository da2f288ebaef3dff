// The address of a `sluice serve` as its clients are given it: "http://HOST[:PORT][/]", read in
// one place for the library (ClientOptions::store) and `sluice bench --target http --url`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice {

struct HttpUrl {
  std::string host;  // a name or an IPv4/IPv6 address (without brackets)
  std::uint16_t port = 80;
};

// HOST a name, an IPv4 address or a bracketed IPv6 one; PORT 1..65535, default 80.
// InvalidArgument otherwise — https (there is no TLS client here), a path, a query, user info,
// an empty host — with a message that callers prefix with where the URL came from.
StatusOr<HttpUrl> parse_http_url(std::string_view url);

// "http://host:port" ("http://[::1]:8080"), for reports.
std::string format_http_url(const HttpUrl& url);

}  // namespace sluice
