#include "sluice/core/json_text.h"

#include "sluice/core/utf8.h"

namespace sluice {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// Bytes in the UTF-8 sequence whose lead byte is `lead` (>= 0x80); 0 for a byte that cannot
// lead one.
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

void append_escaped_ascii(std::string& out, char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto u = static_cast<unsigned char>(c);
  if (c == '"' || c == '\\') {
    out.push_back('\\');
    out.push_back(c);
  } else if (u < 0x20) {
    // The short forms where JSON has them (as nlohmann::json writes them), \u00XX otherwise.
    switch (c) {
      case '\b':
        out += "\\b";
        return;
      case '\f':
        out += "\\f";
        return;
      case '\n':
        out += "\\n";
        return;
      case '\r':
        out += "\\r";
        return;
      case '\t':
        out += "\\t";
        return;
      default:
        break;
    }
    out += "\\u00";
    out.push_back(kHex[u >> 4]);
    out.push_back(kHex[u & 0xF]);
  } else {
    out.push_back(c);
  }
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (u < 0x80) {
      append_escaped_ascii(out, text[i]);
      ++i;
      continue;
    }
    const std::size_t length = sequence_length(u);
    if (length != 0 && i + length <= text.size() && is_valid_utf8(text.substr(i, length))) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  out.push_back('"');
}

}  // namespace sluice
