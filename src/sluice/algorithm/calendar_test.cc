// Tests of calendar periods (calendar.h) against hand-computed UTC instants: the 23- and 25-hour
// days of daylight saving in Europe/Berlin (CET +1, CEST +2; 2026-03-29 and 2026-10-25) and
// America/New_York (EST -5, EDT -4; 2026-03-08 and 2026-11-01), month ends, February in leap and
// common years, weeks from Monday, years, and an instant pinned at 23:59:59.999999 local.
#include "sluice/algorithm/calendar.h"

#include <date/date.h>
#include <gtest/gtest.h>

#include <string>

namespace sluice::algorithm {
namespace {

constexpr Micros kHour = 3600 * kMicrosPerSecond;

// An instant given in UTC: y-m-d h:00, plus `micros`.
Micros utc(int y, unsigned m, unsigned d, int h = 0, Micros micros = 0) {
  const date::sys_days day{date::year{y} / m / d};
  return std::chrono::duration_cast<std::chrono::microseconds>(day.time_since_epoch()).count() +
         h * kHour + micros;
}

PeriodBounds period(CalendarPeriod p, const std::string& zone, Micros at) {
  return calendar_period({.period = p, .time_zone = zone}, at);
}

struct Case {
  std::string name;
  CalendarPeriod period;
  std::string zone;
  Micros at;
  PeriodBounds expected;
};

TEST(CalendarTest, PeriodsMatchTheirHandComputedBounds) {
  using enum CalendarPeriod;
  const Case cases[] = {
      {"Berlin spring forward: a 23-hour day",
       kDay,
       "Europe/Berlin",
       utc(2026, 3, 29, 10),
       {utc(2026, 3, 28, 23), utc(2026, 3, 29, 22)}},
      {"Berlin fall back: a 25-hour day",
       kDay,
       "Europe/Berlin",
       utc(2026, 10, 25, 10),
       {utc(2026, 10, 24, 22), utc(2026, 10, 25, 23)}},
      {"New York spring forward: 23 hours",
       kDay,
       "America/New_York",
       utc(2026, 3, 8, 12),
       {utc(2026, 3, 8, 5), utc(2026, 3, 9, 4)}},
      {"New York fall back: 25 hours",
       kDay,
       "America/New_York",
       utc(2026, 11, 1, 12),
       {utc(2026, 11, 1, 4), utc(2026, 11, 2, 5)}},
      {"Berlin 23:59:59.999999 local is the day before",
       kDay,
       "Europe/Berlin",
       utc(2026, 3, 28, 22, kHour - 1),
       {utc(2026, 3, 27, 23), utc(2026, 3, 28, 23)}},
      {"Berlin local midnight starts the next",
       kDay,
       "Europe/Berlin",
       utc(2026, 3, 28, 23),
       {utc(2026, 3, 28, 23), utc(2026, 3, 29, 22)}},
      {"New York 23:59:59.999999 EDT",
       kDay,
       "America/New_York",
       utc(2026, 11, 1, 3, kHour - 1),
       {utc(2026, 10, 31, 4), utc(2026, 11, 1, 4)}},
      {"Berlin January ends at 23:00 UTC on the 31st",
       kMonth,
       "Europe/Berlin",
       utc(2026, 1, 31, 22, kHour - 1),
       {utc(2025, 12, 31, 23), utc(2026, 1, 31, 23)}},
      {"Berlin March holds the spring forward",
       kMonth,
       "Europe/Berlin",
       utc(2026, 3, 15),
       {utc(2026, 2, 28, 23), utc(2026, 3, 31, 22)}},
      {"New York February of a leap year: 29 days",
       kMonth,
       "America/New_York",
       utc(2028, 2, 29, 12),
       {utc(2028, 2, 1, 5), utc(2028, 3, 1, 5)}},
      {"New York February of a common year: 28 days",
       kMonth,
       "America/New_York",
       utc(2027, 2, 28, 12),
       {utc(2027, 2, 1, 5), utc(2027, 3, 1, 5)}},
      {"the leap day itself",
       kDay,
       "UTC",
       utc(2028, 2, 29, 23, kHour - 1),
       {utc(2028, 2, 29), utc(2028, 3, 1)}},
      {"December 31 ends the month and the year",
       kMonth,
       "UTC",
       utc(2026, 12, 31, 23, kHour - 1),
       {utc(2026, 12, 1), utc(2027, 1, 1)}},
      {"a week starts on Monday (2026-11-25 is a Wednesday)",
       kWeek,
       "UTC",
       utc(2026, 11, 25, 9),
       {utc(2026, 11, 23), utc(2026, 11, 30)}},
      {"a Sunday ends its week",
       kWeek,
       "UTC",
       utc(2026, 11, 29, 23, kHour - 1),
       {utc(2026, 11, 23), utc(2026, 11, 30)}},
      {"the week of the fall back in Berlin: 7 days and an hour",
       kWeek,
       "Europe/Berlin",
       utc(2026, 10, 25, 12),
       {utc(2026, 10, 18, 22), utc(2026, 10, 25, 23)}},
      {"a Berlin year",
       kYear,
       "Europe/Berlin",
       utc(2026, 6, 1),
       {utc(2025, 12, 31, 23), utc(2026, 12, 31, 23)}},
      {"a leap year in UTC",
       kYear,
       "UTC",
       utc(2028, 12, 31, 23, kHour - 1),
       {utc(2028, 1, 1), utc(2029, 1, 1)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const PeriodBounds bounds = period(c.period, c.zone, c.at);
    EXPECT_EQ(bounds.start, c.expected.start);
    EXPECT_EQ(bounds.end, c.expected.end);
    EXPECT_LE(bounds.start, c.at);
    EXPECT_LT(c.at, bounds.end);
    EXPECT_LE(bounds.end - bounds.start, longest_period(c.period));
  }
}

TEST(CalendarTest, ConsecutivePeriodsTileTime) {
  // Across the whole of 2026 in Berlin: each day starts where the previous one ended.
  PeriodBounds day = period(CalendarPeriod::kDay, "Europe/Berlin", utc(2026, 1, 1));
  int short_days = 0;
  int long_days = 0;
  for (int i = 0; i < 365; ++i) {
    const PeriodBounds next = period(CalendarPeriod::kDay, "Europe/Berlin", day.end);
    ASSERT_EQ(next.start, day.end);
    ASSERT_EQ(period(CalendarPeriod::kDay, "Europe/Berlin", day.end - 1), day);
    short_days += day.end - day.start == 23 * kHour;
    long_days += day.end - day.start == 25 * kHour;
    day = next;
  }
  EXPECT_EQ(short_days, 1);
  EXPECT_EQ(long_days, 1);
}

TEST(CalendarTest, UnknownZonesAreNamed) {
  EXPECT_TRUE(validate_time_zone("Europe/Berlin").ok());
  EXPECT_TRUE(validate_time_zone("UTC").ok());
  const Status unknown = validate_time_zone("Mars/Olympus_Mons");
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("Mars/Olympus_Mons"), std::string::npos);
}

}  // namespace
}  // namespace sluice::algorithm
