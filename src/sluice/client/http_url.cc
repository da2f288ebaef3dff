#include "sluice/client/http_url.h"

#include <charconv>
#include <optional>

namespace sluice {
namespace {

constexpr std::string_view kScheme = "http://";

// What may appear between [ and ]: an IPv6 address (with an IPv4 tail, "::ffff:1.2.3.4").
bool is_ipv6_literal(std::string_view host) {
  return host.find(':') != std::string_view::npos &&
         host.find_first_not_of("0123456789abcdefABCDEF:.") == std::string_view::npos;
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
  if (url.rfind("https://", 0) == 0) {
    return invalid_argument(
        "https is not supported (no TLS client); use http:// or a TLS-terminating proxy's plain "
        "port");
  }
  if (url.rfind(kScheme, 0) != 0) {
    return invalid_argument("must be http://HOST:PORT");
  }
  std::string_view rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#@") != std::string_view::npos) {
    return invalid_argument("only http://HOST:PORT (no path, query or user)");
  }
  HttpUrl parsed;
  std::optional<std::string_view> port;  // set when the URL has a ":"
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return invalid_argument("unclosed [ in the host");
    }
    parsed.host = std::string(rest.substr(1, close - 1));
    if (!is_ipv6_literal(parsed.host)) {
      return invalid_argument("the host in [ ] must be an IPv6 address");
    }
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return invalid_argument("expected :PORT after the [host]");
    }
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const std::size_t colon = rest.find(':');
    parsed.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      // An unbracketed IPv6 address would be read as host and port; say how to write it.
      if (port->find(':') != std::string_view::npos) {
        return invalid_argument("write an IPv6 host in brackets, [::1]");
      }
    }
  }
  if (parsed.host.empty()) return invalid_argument("the host is empty");
  if (!is_plain_host(parsed.host)) {
    return invalid_argument("the host holds a space, a bracket or a control character");
  }
  if (port) {
    const char* const last = port->data() + port->size();
    unsigned value = 0;
    const auto [end, error] = std::from_chars(port->data(), last, value);
    if (port->empty() || error != std::errc() || end != last || value == 0 || value > 65535) {
      return invalid_argument("port must be 1 to 65535");
    }
    parsed.port = static_cast<std::uint16_t>(value);
  }
  return parsed;
}

std::string format_http_url(const HttpUrl& url) {
  const bool ipv6 = url.host.find(':') != std::string::npos;
  return std::string(kScheme) + (ipv6 ? "[" + url.host + "]" : url.host) + ":" +
         std::to_string(url.port);
}

}  // namespace sluice
