// ASCII character helpers shared by the parsers of text that is ASCII by definition — URL schemes
// and hosts, HTTP header names, percent escapes — so each does not carry its own copy. Locale-free
// on purpose: <cctype> depends on the C locale and is undefined for negative chars.
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice {

constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Equal ignoring ASCII case (URL schemes, HTTP header names); other bytes must match exactly.
constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

// 0-15 for a hex digit (either case), -1 for anything else.
constexpr int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// True when `text` is non-empty and holds only '0'-'9'.
constexpr bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace sluice
