#include "sluice/core/percent_encoding.h"

#include "sluice/core/ascii.h"

namespace sluice {
namespace {

// The byte of the escape starting at text[i] ('%'), or -1 when it is not '%' and two hex digits.
int escaped_byte(std::string_view text, std::size_t i) {
  if (text[i] != '%' || i + 2 >= text.size()) return -1;
  const int high = hex_digit_value(text[i + 1]);
  const int low = hex_digit_value(text[i + 2]);
  return high < 0 || low < 0 ? -1 : (high << 4) | low;
}

}  // namespace

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xF]);
    }
  }
  return out;
}

std::optional<std::string> percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    const int byte = escaped_byte(text, i);
    if (byte < 0) return std::nullopt;
    out.push_back(static_cast<char>(byte));
    i += 2;
  }
  return out;
}

std::string percent_decode_lenient(std::string_view text, PlusSign plus) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (const int byte = escaped_byte(text, i); byte >= 0) {
      out.push_back(static_cast<char>(byte));
      i += 2;
      continue;
    }
    out.push_back(plus == PlusSign::kSpace && c == '+' ? ' ' : c);
  }
  return out;
}

}  // namespace sluice
