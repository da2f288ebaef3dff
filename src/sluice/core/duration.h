// Time as text. Durations as written in policies and flags: an integer followed by a unit
// (us, ms, s, m, h, d), e.g. "250ms", "1s", "5m"; no fractions, signs or spaces. Instants as
// people read them: ISO 8601 in UTC with microseconds, "2026-11-24T09:15:02.123456Z".
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

// The instants with a four-digit year, 0000-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z: the
// range format_timestamp spells as a date and parse_timestamp accepts.
inline constexpr Micros kMinTimestamp = -62'167'219'200'000'000;
inline constexpr Micros kMaxTimestamp = 253'402'300'799'999'999;

// `at` (µs since the Unix epoch) as "2026-11-24T09:15:02.123456Z": UTC, always six fraction
// digits, so the text is exact and sorts as the instants do. Outside [kMinTimestamp,
// kMaxTimestamp], which no clock reaches, the microsecond count in decimal ("253402300800000000").
std::string format_timestamp(Micros at);

// Reads an RFC 3339 instant: "2026-11-24T09:15:02.123456Z", as format_timestamp writes it, or
// with 0 to 6 fraction digits, a lower-case t or z, or an offset ("2026-11-24T10:15:02+01:00").
// Errors (InvalidArgument) quote the text and name the problem: not that shape, a date or time
// that does not exist (including leap seconds), more than six fraction digits, or an instant
// outside [kMinTimestamp, kMaxTimestamp].
StatusOr<Micros> parse_timestamp(std::string_view text);

}  // namespace sluice
