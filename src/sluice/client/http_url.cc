#include "sluice/client/http_url.h"

#include <charconv>
#include <optional>

namespace sluice {
namespace {

constexpr std::string_view kScheme = "http://";

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
