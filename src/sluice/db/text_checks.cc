#include "sluice/db/text_checks.h"

#include <string>

#include "sluice/core/utf8.h"

namespace sluice::db {

Status check_text(std::string_view field, std::string_view value, std::size_t max_bytes,
                  Emptiness emptiness) {
  const std::string name(field);
  if (emptiness == Emptiness::kRefused && value.empty()) {
    return invalid_argument(name + ": must not be empty");
  }
  if (value.size() > max_bytes) {
    return invalid_argument(name + ": must be at most " + std::to_string(max_bytes) + " bytes");
  }
  if (value.find('\0') != std::string_view::npos) {
    return invalid_argument(name + ": must not contain NUL bytes");
  }
  if (!is_valid_utf8(value)) return invalid_argument(name + ": must be valid UTF-8");
  return Status();
}

}  // namespace sluice::db
