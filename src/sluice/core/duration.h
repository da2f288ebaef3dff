// Durations as written in policies and flags: an integer followed by a unit
// (us, ms, s, m, h, d), e.g. "250ms", "1s", "5m". No fractions, signs or spaces.
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice {

// Parses "250ms" into 250000. Errors (InvalidArgument) name the problem: missing number,
// missing or unknown unit, negative value, or a value beyond int64 microseconds.
StatusOr<Micros> parse_duration(std::string_view text);

// The shortest exact spelling: 1500000 -> "1500ms", 60000000 -> "1m", 0 -> "0s".
std::string format_duration(Micros duration);

}  // namespace sluice
