#include "sluice/core/url.h"

#include <charconv>

#include "sluice/core/ascii.h"

namespace sluice::url {
namespace {

// text[at+1..] as the optional tail after a delimiter found at `at`, and text cut before it.
std::optional<std::string_view> cut_at(std::string_view& text, std::size_t at) {
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view tail = text.substr(at + 1);
  text = text.substr(0, at);
  return tail;
}

}  // namespace

Components split_components(std::string_view text) {
  Components parts;
  parts.fragment = cut_at(text, text.find('#'));
  parts.query = cut_at(text, text.find('?'));
  parts.path = cut_at(text, text.find('/'));
  if (const std::size_t at = text.rfind('@'); at != std::string_view::npos) {
    parts.userinfo = text.substr(0, at);
    text = text.substr(at + 1);
  }
  parts.authority = text;
  return parts;
}

Userinfo split_userinfo(std::string_view userinfo) {
  Userinfo split{.user = userinfo};
  split.password = cut_at(split.user, userinfo.find(':'));
  return split;
}

HostPort split_host_port(std::string_view authority) {
  HostPort split;
  if (!authority.starts_with('[')) {
    split.host = authority;
    split.port = cut_at(split.host, authority.find(':'));
    return split;
  }
  split.bracketed = true;
  const std::size_t close = authority.find(']');
  if (close == std::string_view::npos) {
    split.unclosed = true;
    split.host = authority.substr(1);
    return split;
  }
  split.host = authority.substr(1, close - 1);
  const std::string_view after = authority.substr(close + 1);
  if (after.starts_with(':')) {
    split.port = after.substr(1);
  } else {
    split.unexpected = after;
  }
  return split;
}

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (!all_digits(text)) return std::nullopt;
  unsigned long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value == 0 || value > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(value);
}

bool is_host_name(std::string_view host) {
  for (char c : host) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '-' || c == '_')) {
      return false;
    }
  }
  return true;
}

bool has_ipv6_characters(std::string_view host) {
  for (char c : host) {
    if (hex_digit_value(c) < 0 && c != ':' && c != '.') return false;
  }
  return true;
}

std::vector<QueryItem> split_query(std::string_view query) {
  std::vector<QueryItem> items;
  for (std::size_t start = 0; start < query.size();) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    QueryItem item{.name = query.substr(start, end - start)};
    item.value = cut_at(item.name, item.name.find('='));
    items.push_back(item);
    start = end + 1;
  }
  return items;
}

}  // namespace sluice::url
