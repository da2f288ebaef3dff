#include "sluice/algorithm/calendar.h"

#include <date/date.h>
#include <date/tz.h>

#include <chrono>
#include <exception>
#include <string>

namespace sluice::algorithm {
namespace {

using std::chrono::microseconds;

// The zone, or UTC when the database does not know it (validated earlier; see the header).
const date::time_zone* zone_of(std::string_view name) {
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    return date::locate_zone("Etc/UTC");
  }
}

// The first instant of local day `day` in `zone`: local midnight, or, where a transition skips
// midnight, the instant the day's clock starts at.
Micros start_of(const date::time_zone* zone, date::local_days day) {
  const date::local_time<microseconds> midnight{day};
  const date::local_info info = zone->get_info(midnight);
  date::sys_time<microseconds> at;
  if (info.result == date::local_info::nonexistent) {
    at = date::sys_time<microseconds>{info.second.begin};  // the gap's end
  } else {
    at = zone->to_sys(midnight, date::choose::earliest);
  }
  return at.time_since_epoch().count();
}

}  // namespace

std::string_view calendar_period_name(CalendarPeriod period) {
  switch (period) {
    case CalendarPeriod::kDay:
      return "day";
    case CalendarPeriod::kWeek:
      return "week";
    case CalendarPeriod::kMonth:
      return "month";
    case CalendarPeriod::kYear:
      return "year";
  }
  return "day";
}

Micros longest_period(CalendarPeriod period) {
  const Micros hour = 3600 * kMicrosPerSecond;
  switch (period) {
    case CalendarPeriod::kDay:
      return 25 * hour;
    case CalendarPeriod::kWeek:
      return 7 * kMicrosPerDay + hour;
    case CalendarPeriod::kMonth:
      return 31 * kMicrosPerDay + hour;
    case CalendarPeriod::kYear:
      return 366 * kMicrosPerDay + hour;
  }
  return 366 * kMicrosPerDay + hour;
}

StatusOr<std::string_view> known_time_zone(std::string_view name) {
  try {
    // The database is loaded once and never reloaded (nothing calls date::reload_tzdb), so the
    // name it holds outlives every policy.
    return std::string_view(date::locate_zone(name)->name());
  } catch (const std::exception&) {
    return not_found("time zone \"" + std::string(name) +
                     "\" is not in the time-zone database (an IANA name such as "
                     "\"Europe/Berlin\" or \"UTC\")");
  }
}

Status validate_time_zone(std::string_view name) {
  StatusOr<std::string_view> known = known_time_zone(name);
  return known.ok() ? Status() : known.status();
}

PeriodBounds calendar_period(const Calendar& calendar, Micros at) {
  const date::time_zone* zone = zone_of(calendar.time_zone);
  const date::sys_time<microseconds> instant{microseconds{at}};
  const date::local_days today = date::floor<date::days>(zone->to_local(instant));
  date::local_days first = today;
  date::local_days next = today;
  switch (calendar.period) {
    case CalendarPeriod::kDay:
      next = today + date::days{1};
      break;
    case CalendarPeriod::kWeek:
      first = today - (date::weekday{today} - date::Monday);
      next = first + date::days{7};
      break;
    case CalendarPeriod::kMonth: {
      const date::year_month_day ymd{today};
      const date::year_month month = ymd.year() / ymd.month();
      first = date::local_days{month / 1};
      next = date::local_days{(month + date::months{1}) / 1};
      break;
    }
    case CalendarPeriod::kYear: {
      const date::year year = date::year_month_day{today}.year();
      first = date::local_days{year / 1 / 1};
      next = date::local_days{(year + date::years{1}) / 1 / 1};
      break;
    }
  }
  PeriodBounds bounds{.start = start_of(zone, first), .end = start_of(zone, next)};
  // A local day whose first instant comes after `at` cannot happen (a gap at midnight starts the
  // day at its end, and `at` lies in that day), but stay defined if the database says otherwise.
  if (bounds.start > at) bounds.start = at;
  return bounds;
}

}  // namespace sluice::algorithm
