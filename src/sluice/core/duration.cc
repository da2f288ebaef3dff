#include "sluice/core/duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <utility>

namespace sluice {
namespace {

struct Unit {
  std::string_view suffix;
  Micros micros;
};

// Largest first, so format_duration picks the shortest spelling.
constexpr std::array<Unit, 6> kUnits = {{
    {"d", kMicrosPerDay},
    {"h", kMicrosPerHour},
    {"m", kMicrosPerMinute},
    {"s", kMicrosPerSecond},
    {"ms", kMicrosPerMilli},
    {"us", 1},
}};

}  // namespace

StatusOr<Micros> parse_duration(std::string_view text) {
  const auto quoted = [&] { return "\"" + std::string(text) + "\""; };
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) {
    return invalid_argument("duration " + quoted() +
                            ": must be a non-negative integer followed by a unit "
                            "(us, ms, s, m, h, d), e.g. \"250ms\"");
  }
  const std::string_view unit_text = text.substr(digits);
  if (unit_text.empty()) {
    return invalid_argument("duration " + quoted() + ": missing unit (us, ms, s, m, h, d)");
  }
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc{} || end != text.data() + digits) {
    return invalid_argument("duration " + quoted() + ": number is too large");
  }
  for (const Unit& unit : kUnits) {
    if (unit.suffix != unit_text) continue;
    if (value > static_cast<std::uint64_t>(std::numeric_limits<Micros>::max() / unit.micros)) {
      return invalid_argument("duration " + quoted() + ": too large for int64 microseconds");
    }
    return static_cast<Micros>(value) * unit.micros;
  }
  return invalid_argument("duration " + quoted() + ": unknown unit \"" + std::string(unit_text) +
                          "\" (use us, ms, s, m, h or d)");
}

std::string format_duration(Micros duration) {
  if (duration == 0) return "0s";
  for (const Unit& unit : kUnits) {
    if (duration % unit.micros == 0)
      return std::to_string(duration / unit.micros) + std::string(unit.suffix);
  }
  return std::to_string(duration) + "us";
}

}  // namespace sluice
