// Checks on text before it reaches SQL, so every backend accepts and returns the same strings:
// SQLite stores any bytes, PostgreSQL refuses invalid UTF-8 and NUL, MySQL's strict mode refuses
// invalid utf8mb4 and over-long values. Checking first turns all of these into one clear
// InvalidArgument naming the field.
#pragma once

#include <cstddef>
#include <string_view>

#include "sluice/core/utf8.h"
#include "sluice/status.h"

namespace sluice::db {

using sluice::is_valid_utf8;

enum class Emptiness { kAllowed, kRefused };

// InvalidArgument ("<field>: ...") unless `value` is valid UTF-8 without NUL bytes, at most
// `max_bytes` long and, with Emptiness::kRefused, not empty.
Status check_text(std::string_view field, std::string_view value, std::size_t max_bytes,
                  Emptiness emptiness = Emptiness::kRefused);

// Short identifiers stored in VARCHAR(255) columns: user names, actors, token ids.
inline constexpr std::size_t kMaxIdentifierBytes = 255;
// Descriptions and hashes stored in unbounded text columns.
inline constexpr std::size_t kMaxTextBytes = 1 << 20;

}  // namespace sluice::db
