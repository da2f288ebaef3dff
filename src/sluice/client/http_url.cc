#include "sluice/client/http_url.h"

#include <optional>

#include "sluice/core/url.h"

namespace sluice {
namespace {

constexpr std::string_view kScheme = "http://";

// What may appear between [ and ]: an IPv6 address (with an IPv4 tail, "::ffff:1.2.3.4").
bool is_ipv6_literal(std::string_view host) {
  return host.find(':') != std::string_view::npos && url::has_ipv6_characters(host);
}

// A host name or IPv4 address: no brackets, spaces or control characters, which no resolver
// accepts and which would not survive being written back into a URL.
bool is_plain_host(std::string_view host) {
  for (const char c : host) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f || c == '[' || c == ']') return false;
  }
  return true;
}

}  // namespace

StatusOr<HttpUrl> parse_http_url(std::string_view url) {
  if (url.starts_with("https://")) {
    return invalid_argument(
        "https is not supported (no TLS client); use http:// or a TLS-terminating proxy's plain "
        "port");
  }
  if (!url.starts_with(kScheme)) {
    return invalid_argument("must be http://HOST:PORT");
  }
  const url::Components parts = url::split_components(url.substr(kScheme.size()));
  if (parts.userinfo || parts.query || parts.fragment || !parts.path.value_or("").empty()) {
    return invalid_argument("only http://HOST:PORT (no path, query or user)");
  }
  const url::HostPort split = url::split_host_port(parts.authority);
  HttpUrl parsed{.host = std::string(split.host)};
  if (split.bracketed) {
    if (split.unclosed) return invalid_argument("unclosed [ in the host");
    if (!is_ipv6_literal(split.host)) {
      return invalid_argument("the host in [ ] must be an IPv6 address");
    }
    if (!split.unexpected.empty()) return invalid_argument("expected :PORT after the [host]");
  } else if (split.port && split.port->find(':') != std::string_view::npos) {
    // An unbracketed IPv6 address would be read as host and port; say how to write it.
    return invalid_argument("write an IPv6 host in brackets, [::1]");
  }
  if (parsed.host.empty()) return invalid_argument("the host is empty");
  if (!is_plain_host(parsed.host)) {
    return invalid_argument("the host holds a space, a bracket or a control character");
  }
  if (split.port) {
    const std::optional<std::uint16_t> port = url::parse_port(*split.port);
    if (!port) return invalid_argument("port must be 1 to 65535");
    parsed.port = *port;
  }
  return parsed;
}

std::string format_http_url(const HttpUrl& url) {
  const bool ipv6 = url.host.find(':') != std::string::npos;
  return std::string(kScheme) + (ipv6 ? "[" + url.host + "]" : url.host) + ":" +
         std::to_string(url.port);
}

}  // namespace sluice
