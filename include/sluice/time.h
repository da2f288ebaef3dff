// Time vocabulary: every instant and duration in Sluice is an int64 count of microseconds
// (instants since the Unix epoch). Microseconds keep Lua's doubles exact (≈1.8e15 < 2^53).
#pragma once

#include <cstdint>

namespace sluice {

using Micros = std::int64_t;

inline constexpr Micros kMicrosPerMilli = 1'000;
inline constexpr Micros kMicrosPerSecond = 1'000'000;
inline constexpr Micros kMicrosPerMinute = 60 * kMicrosPerSecond;
inline constexpr Micros kMicrosPerHour = 60 * kMicrosPerMinute;
inline constexpr Micros kMicrosPerDay = 24 * kMicrosPerHour;

// Largest integer every intermediate product may reach so Lua's doubles stay exact (2^53).
inline constexpr std::int64_t kMaxExactInteger = std::int64_t{1} << 53;

}  // namespace sluice
