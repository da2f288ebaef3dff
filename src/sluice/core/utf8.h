// UTF-8 checks shared by the SQL stores (text every backend stores alike) and the account rules
// (user names that compare equal byte for byte on every backend).
#pragma once

#include <string_view>

namespace sluice {

// True when `text` is well-formed UTF-8: no overlong encodings, surrogates or code points
// beyond U+10FFFF. NUL bytes are well-formed (callers that refuse them check separately).
bool is_valid_utf8(std::string_view text);

}  // namespace sluice
