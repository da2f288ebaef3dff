#include "sluice/auth/accounts.h"

#include <algorithm>

#include "sluice/core/key.h"
#include "sluice/core/utf8.h"

namespace sluice::auth {

Status validate_app_name(std::string_view name, std::string_view field) {
  if (name == "*") {
    return invalid_argument(std::string(field) +
                            ": \"*\" means any app in a policy and cannot name one");
  }
  return validate_policy_name(name, field);
}

Status validate_user_name(std::string_view name, std::string_view field) {
  std::string without_at(name);
  std::replace(without_at.begin(), without_at.end(), '@', '_');
  if (is_valid_policy_name(without_at)) return {};
  return invalid_argument(std::string(field) +
                          ": must be 1-128 letters, digits, '.', '_', '-' or '@' (got \"" +
                          std::string(name) + "\")");
}

namespace {

bool is_control_byte(unsigned char byte) { return byte < 0x20 || byte == 0x7f; }

// U+0080-U+009F, encoded C2 80 - C2 9F.
bool starts_c1_control(std::string_view text, std::size_t at) {
  return static_cast<unsigned char>(text[at]) == 0xc2 && at + 1 < text.size() &&
         static_cast<unsigned char>(text[at + 1]) >= 0x80 &&
         static_cast<unsigned char>(text[at + 1]) <= 0x9f;
}

// The whitespace a name could be padded with so that it looks like another one: ASCII space
// (controls are refused anyway) and the Unicode spaces a copy-paste brings along.
constexpr std::string_view kUnicodeSpaces[] = {
    "\u00a0",  // no-break space
    "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007",
    "\u2008", "\u2009", "\u200a", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
    "\ufeff",  // zero-width no-break space (byte-order mark)
};

bool has_space_at_an_end(std::string_view name) {
  if (name.front() == ' ' || name.back() == ' ') return true;
  for (std::string_view space : kUnicodeSpaces) {
    if (name.starts_with(space) || name.ends_with(space)) return true;
  }
  return false;
}

}  // namespace

Status validate_login_name(std::string_view name, std::string_view field) {
  const std::string prefix = std::string(field) + ": ";
  if (name.empty()) return invalid_argument(prefix + "must not be empty");
  if (name.size() > kMaxLoginNameBytes) {
    return invalid_argument(prefix + "must be at most " + std::to_string(kMaxLoginNameBytes) +
                            " bytes (got " + std::to_string(name.size()) + ")");
  }
  if (!is_valid_utf8(name)) return invalid_argument(prefix + "must be valid UTF-8");
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (is_control_byte(static_cast<unsigned char>(name[i])) || starts_c1_control(name, i)) {
      return invalid_argument(prefix + "must not contain control characters (NUL included)");
    }
  }
  if (has_space_at_an_end(name)) {
    return invalid_argument(prefix + "must not begin or end with whitespace");
  }
  return {};
}

}  // namespace sluice::auth
