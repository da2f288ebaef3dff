// Calendar periods (docs/quotas.md#calendar-periods): a fixed window aligned to local days, weeks
// (Monday first), months or years in an IANA time zone instead of to the Unix epoch. Daylight-
// saving days last 23 or 25 hours, months 28 to 31 days, and February 29 exists in leap years:
// the bounds come from the time-zone database (Howard Hinnant's date/tz.h over the system tzdata).
// The database is read once, at the first use, and is immutable afterwards: these functions are
// pure in everything but that one-time load. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::algorithm {

enum class CalendarPeriod { kDay, kWeek, kMonth, kYear };

// A plain value (limits are copied on hot paths): the zone's name must outlive it, which a
// string literal or known_time_zone's answer (the time-zone database's own copy) does.
struct Calendar {
  CalendarPeriod period = CalendarPeriod::kDay;
  std::string_view time_zone = "UTC";  // an IANA name: "Europe/Berlin", "America/New_York"
  friend bool operator==(const Calendar&, const Calendar&) = default;
};

// One period: [start, end), µs since the Unix epoch.
struct PeriodBounds {
  Micros start = 0;
  Micros end = 0;
  friend bool operator==(const PeriodBounds&, const PeriodBounds&) = default;
};

// "day", "week", "month", "year".
std::string_view calendar_period_name(CalendarPeriod period);

// The longest a period can last (a 25-hour day, a 31-day month with a 25-hour day, a leap year
// with one): what validation bounds products with, in place of a fixed window's `window`.
Micros longest_period(CalendarPeriod period);

// NotFound naming the zone when the time-zone database does not know it.
Status validate_time_zone(std::string_view name);
// The database's own name of zone `name` (a view that lives as long as the process), or
// validate_time_zone's error.
StatusOr<std::string_view> known_time_zone(std::string_view name);

// The period of `calendar` holding `at`: it starts at the first instant of a local day (local
// midnight, or the end of a daylight-saving gap that skips midnight), on a Monday, on the 1st of
// a month or on January 1. Precondition: validate_time_zone(calendar.time_zone) is ok; an unknown
// zone is taken as UTC.
PeriodBounds calendar_period(const Calendar& calendar, Micros at);

}  // namespace sluice::algorithm
