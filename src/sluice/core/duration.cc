#include "sluice/core/duration.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
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

// Appends `value` (>= 0) in decimal, zero-padded to `width` digits.
void append_padded(std::string& text, std::int64_t value, std::size_t width) {
  const std::string digits = std::to_string(value);
  if (digits.size() < width) text.append(width - digits.size(), '0');
  text += digits;
}

// Reads a fixed-width decimal field at `position` and moves past it; nullopt unless all
// `width` characters are digits.
std::optional<int> take_digits(std::string_view text, std::size_t& position, std::size_t width) {
  if (text.size() - position < width) return std::nullopt;
  int value = 0;
  for (std::size_t i = position; i < position + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  position += width;
  return value;
}

// Takes one of `chars` at `position`; the character taken, or '\0'.
char take_one_of(std::string_view text, std::size_t& position, std::string_view chars) {
  if (position >= text.size() || chars.find(text[position]) == std::string_view::npos) return '\0';
  return text[position++];
}

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

std::string format_timestamp(Micros at) {
  if (at < kMinTimestamp || at > kMaxTimestamp) return std::to_string(at);
  // Floor division: an instant before the epoch belongs to the day that starts before it.
  const Micros day = at / kMicrosPerDay - (at % kMicrosPerDay < 0 ? 1 : 0);
  const Micros in_day = at - day * kMicrosPerDay;
  const std::chrono::year_month_day date{std::chrono::sys_days{std::chrono::days{day}}};
  std::string text;
  text.reserve(27);
  append_padded(text, static_cast<int>(date.year()), 4);
  text += '-';
  append_padded(text, static_cast<unsigned>(date.month()), 2);
  text += '-';
  append_padded(text, static_cast<unsigned>(date.day()), 2);
  text += 'T';
  append_padded(text, in_day / kMicrosPerHour, 2);
  text += ':';
  append_padded(text, in_day / kMicrosPerMinute % 60, 2);
  text += ':';
  append_padded(text, in_day / kMicrosPerSecond % 60, 2);
  text += '.';
  append_padded(text, in_day % kMicrosPerSecond, 6);
  text += 'Z';
  return text;
}

StatusOr<Micros> parse_timestamp(std::string_view text) {
  const auto error = [&](std::string_view problem) {
    return invalid_argument("time \"" + std::string(text) + "\": " + std::string(problem));
  };
  const auto malformed = [&] {
    return error(
        "must be an ISO 8601 time such as \"2026-11-24T09:15:02.123456Z\" (UTC) or "
        "\"2026-11-24T10:15:02+01:00\"");
  };
  std::size_t at = 0;
  const std::optional<int> year = take_digits(text, at, 4);
  if (!year || !take_one_of(text, at, "-")) return malformed();
  const std::optional<int> month = take_digits(text, at, 2);
  if (!month || !take_one_of(text, at, "-")) return malformed();
  const std::optional<int> day = take_digits(text, at, 2);
  if (!day || !take_one_of(text, at, "Tt")) return malformed();
  const std::optional<int> hour = take_digits(text, at, 2);
  if (!hour || !take_one_of(text, at, ":")) return malformed();
  const std::optional<int> minute = take_digits(text, at, 2);
  if (!minute || !take_one_of(text, at, ":")) return malformed();
  const std::optional<int> second = take_digits(text, at, 2);
  if (!second) return malformed();

  Micros fraction = 0;
  if (take_one_of(text, at, ".")) {
    std::size_t digits = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (++digits > 6) return error("more than 6 fraction digits: times are in microseconds");
      fraction = fraction * 10 + (text[at++] - '0');
    }
    if (digits == 0) return malformed();
    for (std::size_t i = digits; i < 6; ++i) fraction *= 10;
  }

  Micros offset = 0;
  const char zone = take_one_of(text, at, "Zz+-");
  if (zone == '+' || zone == '-') {
    const std::optional<int> offset_hours = take_digits(text, at, 2);
    if (!offset_hours || !take_one_of(text, at, ":")) return malformed();
    const std::optional<int> offset_minutes = take_digits(text, at, 2);
    if (!offset_minutes) return malformed();
    if (*offset_hours > 23 || *offset_minutes > 59) return error("no such UTC offset");
    offset = (zone == '+' ? 1 : -1) *
             (*offset_hours * kMicrosPerHour + *offset_minutes * kMicrosPerMinute);
  } else if (zone == '\0') {
    return malformed();
  }
  if (at != text.size()) return malformed();

  const std::chrono::year_month_day date{std::chrono::year{*year},
                                         std::chrono::month{static_cast<unsigned>(*month)},
                                         std::chrono::day{static_cast<unsigned>(*day)}};
  if (!date.ok()) return error("no such date");
  if (*hour > 23 || *minute > 59 || *second > 59) {
    return error("no such time of day (hours 00-23, minutes and seconds 00-59)");
  }
  const Micros days = std::chrono::sys_days{date}.time_since_epoch().count();
  const Micros local = days * kMicrosPerDay + *hour * kMicrosPerHour + *minute * kMicrosPerMinute +
                       *second * kMicrosPerSecond + fraction;
  const Micros utc = local - offset;
  if (utc < kMinTimestamp || utc > kMaxTimestamp) {
    return error("outside the years 0000 to 9999 (UTC)");
  }
  return utc;
}

}  // namespace sluice
