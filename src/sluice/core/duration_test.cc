#include "sluice/core/duration.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {
namespace {

constexpr Micros kMax = std::numeric_limits<Micros>::max();

struct UnitCase {
  std::string_view suffix;
  Micros micros;
};
constexpr std::array<UnitCase, 6> kUnits = {{
    {"us", 1},
    {"ms", kMicrosPerMilli},
    {"s", kMicrosPerSecond},
    {"m", kMicrosPerMinute},
    {"h", kMicrosPerHour},
    {"d", kMicrosPerDay},
}};

TEST(ParseDurationTest, ParsesEveryUnit) {
  struct Case {
    std::string text;
    Micros micros;
  };
  const std::vector<Case> cases = {
      {"1us", 1},
      {"250us", 250},
      {"1ms", 1'000},
      {"250ms", 250'000},
      {"1s", 1'000'000},
      {"90s", 90'000'000},
      {"1m", 60'000'000},
      {"5m", 300'000'000},
      {"1h", 3'600'000'000},
      {"36h", 129'600'000'000},
      {"1d", 86'400'000'000},
      {"7d", 604'800'000'000},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    StatusOr<Micros> parsed = parse_duration(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(*parsed, c.micros);
  }
}

TEST(ParseDurationTest, ParsesZeroInEveryUnit) {
  for (const UnitCase& unit : kUnits) {
    const std::string text = "0" + std::string(unit.suffix);
    SCOPED_TRACE(text);
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(*parsed, 0);
  }
}

TEST(ParseDurationTest, AcceptsTheLargestInt64MicrosecondsInEveryUnit) {
  EXPECT_EQ(parse_duration("9223372036854775807us").value(), kMax);
  for (const UnitCase& unit : kUnits) {
    const std::int64_t largest = kMax / unit.micros;
    const std::string text = std::to_string(largest) + std::string(unit.suffix);
    SCOPED_TRACE(text);
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(*parsed, largest * unit.micros);
  }
}

TEST(ParseDurationTest, RejectsValuesOneAboveInt64MicrosecondsInEveryUnit) {
  for (const UnitCase& unit : kUnits) {
    const std::uint64_t too_large = static_cast<std::uint64_t>(kMax / unit.micros) + 1;
    const std::string text = std::to_string(too_large) + std::string(unit.suffix);
    SCOPED_TRACE(text);
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("too large"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseDurationTest, RejectsOverflowingValues) {
  // 2^63 µs is 106 751 991 days and 4 hours; "106752d" overflows only int64 *nanoseconds*.
  for (const std::string text :
       {"9223372036854775808us", "106751992d", "2562047789h", "153722867281m", "9223372036855s",
        "9223372036854776ms", "18446744073709551615us", "18446744073709551616us",
        "99999999999999999999999999s"}) {
    SCOPED_TRACE(text);
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("too large"), std::string::npos)
        << parsed.status().message();
  }
  EXPECT_EQ(parse_duration("106751991d").value(), 106751991 * kMicrosPerDay);
  EXPECT_EQ(parse_duration("106752d").value(), 106752 * kMicrosPerDay);
}

TEST(ParseDurationTest, RejectsDurationWithoutNumber) {
  for (const std::string text : {"", "s", "ms", "d", "-1s", "+1s", " 1s", ".5s", "one s"}) {
    SCOPED_TRACE("\"" + text + "\"");
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("non-negative integer followed by a unit"),
              std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseDurationTest, RejectsDurationWithoutUnit) {
  for (const std::string text : {"0", "5", "250", "9223372036854775807"}) {
    SCOPED_TRACE(text);
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("missing unit"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseDurationTest, RejectsUnknownUnit) {
  struct Case {
    std::string text;
    std::string unit;
  };
  const std::vector<Case> cases = {
      {"5x", "x"},     {"5 s", " s"},     {"1.5s", ".5s"}, {"5S", "S"},     {"5MS", "MS"},
      {"5sec", "sec"}, {"5ns", "ns"},     {"5mss", "mss"}, {"5s ", "s "},   {"1s500ms", "s500ms"},
      {"5µs", "µs"},   {"5us\n", "us\n"}, {"1-s", "-s"},   {"1e3s", "e3s"}, {"7w", "w"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("\"" + c.text + "\"");
    StatusOr<Micros> parsed = parse_duration(c.text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find("unknown unit \"" + c.unit + "\""), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseDurationTest, RejectsEmbeddedNul) {
  const std::string text("5\0s", 3);
  EXPECT_FALSE(parse_duration(text).ok());
}

TEST(ParseDurationTest, ErrorsQuoteTheInput) {
  for (const std::string text :
       {"", "s", "-1s", "5", "5x", "5 s", "1.5s", "9223372036854775808us", "106751992d"}) {
    SCOPED_TRACE("\"" + text + "\"");
    StatusOr<Micros> parsed = parse_duration(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().message().rfind("duration \"" + text + "\": ", 0), 0u)
        << parsed.status().message();
  }
}

TEST(FormatDurationTest, PicksTheShortestExactSpelling) {
  struct Case {
    Micros micros;
    std::string text;
  };
  const std::vector<Case> cases = {
      {0, "0s"},
      {1, "1us"},
      {999, "999us"},
      {1'000, "1ms"},
      {1'001, "1001us"},
      {250'000, "250ms"},
      {1'000'000, "1s"},
      {1'500'000, "1500ms"},
      {59'000'000, "59s"},
      {60'000'000, "1m"},
      {90'000'000, "90s"},
      {3'600'000'000, "1h"},
      {5'400'000'000, "90m"},
      {86'400'000'000, "1d"},
      {129'600'000'000, "36h"},
      {604'800'000'000, "7d"},
      {kMax, "9223372036854775807us"},
      {kMax / kMicrosPerDay * kMicrosPerDay, "106751991d"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(format_duration(c.micros), c.text);
  }
}

// Non-negative durations, biased towards exact multiples of each unit: a uniformly random int64
// is almost never a whole number of seconds, minutes, hours or days.
rc::Gen<Micros> non_negative_duration() {
  return rc::gen::oneOf(
      rc::gen::inRange<Micros>(0, kMax), rc::gen::inRange<Micros>(0, 10'000),
      rc::gen::map(rc::gen::pair(rc::gen::elementOf(kUnits), rc::gen::inRange<Micros>(0, 100'000)),
                   [](const std::pair<UnitCase, Micros>& p) { return p.first.micros * p.second; }),
      rc::gen::map(rc::gen::elementOf(kUnits), [](const UnitCase& unit) {
        return kMax / unit.micros * unit.micros;  // largest multiple of the unit
      }));
}

RC_GTEST_PROP(FormatDurationProperty, ParseOfFormatIsIdentity, ()) {
  const Micros micros = *non_negative_duration();
  const std::string text = format_duration(micros);
  const StatusOr<Micros> parsed = parse_duration(text);
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == micros);
}

RC_GTEST_PROP(FormatDurationProperty, NoExactSpellingIsShorter, ()) {
  const Micros micros = *non_negative_duration();
  const std::string text = format_duration(micros);
  for (const UnitCase& unit : kUnits) {
    if (micros % unit.micros != 0) continue;
    const std::string other = std::to_string(micros / unit.micros) + std::string(unit.suffix);
    RC_ASSERT(text.size() <= other.size());
  }
}

TEST(FormatTimestampTest, WritesUtcWithSixFractionDigits) {
  struct Case {
    Micros at;
    std::string text;
  };
  const std::vector<Case> cases = {
      {0, "1970-01-01T00:00:00.000000Z"},
      {1, "1970-01-01T00:00:00.000001Z"},
      {-1, "1969-12-31T23:59:59.999999Z"},
      {-kMicrosPerDay, "1969-12-31T00:00:00.000000Z"},
      {-kMicrosPerDay - 1, "1969-12-30T23:59:59.999999Z"},
      {1'700'000'000'000'000, "2023-11-14T22:13:20.000000Z"},
      {1'795'511'702'123'456, "2026-11-24T09:15:02.123456Z"},
      {1'709'208'000'000'000, "2024-02-29T12:00:00.000000Z"},
      {951'868'799'999'999, "2000-02-29T23:59:59.999999Z"},
      {kMinTimestamp, "0000-01-01T00:00:00.000000Z"},
      {kMaxTimestamp, "9999-12-31T23:59:59.999999Z"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(format_timestamp(c.at), c.text);
  }
}

TEST(FormatTimestampTest, WritesTheMicrosecondsBeyondFourDigitYears) {
  EXPECT_EQ(format_timestamp(kMinTimestamp - 1), "-62167219200000001");
  EXPECT_EQ(format_timestamp(kMaxTimestamp + 1), "253402300800000000");
  EXPECT_EQ(format_timestamp(kMax), "9223372036854775807");
  EXPECT_EQ(format_timestamp(std::numeric_limits<Micros>::min()), "-9223372036854775808");
}

TEST(ParseTimestampTest, ReadsRfc3339Spellings) {
  struct Case {
    std::string text;
    Micros at;
  };
  const std::vector<Case> cases = {
      {"2026-11-24T09:15:02.123456Z", 1'795'511'702'123'456},
      {"2026-11-24t09:15:02.123456z", 1'795'511'702'123'456},
      {"2026-11-24T09:15:02Z", 1'795'511'702'000'000},
      {"2026-11-24T09:15:02.1Z", 1'795'511'702'100'000},
      {"2026-11-24T09:15:02.123Z", 1'795'511'702'123'000},
      {"2026-11-24T09:15:02.000001Z", 1'795'511'702'000'001},
      {"2026-11-24T10:15:02.123456+01:00", 1'795'511'702'123'456},
      {"2026-11-24T03:45:02.123456-05:30", 1'795'511'702'123'456},
      {"2026-11-24T09:15:02.123456+00:00", 1'795'511'702'123'456},
      {"2026-11-24T09:15:02.123456-00:00", 1'795'511'702'123'456},
      {"2026-11-25T00:15:02.123456+15:00", 1'795'511'702'123'456},
      {"1969-12-31T23:59:59.999999Z", -1},
      {"2000-02-29T23:59:59.999999Z", 951'868'799'999'999},
      {"0000-01-01T00:00:00Z", kMinTimestamp},
      {"9999-12-31T23:59:59.999999Z", kMaxTimestamp},
      {"0000-01-01T01:00:00+01:00", kMinTimestamp},
      {"9999-12-31T22:59:59.999999-01:00", kMaxTimestamp},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const StatusOr<Micros> parsed = parse_timestamp(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(*parsed, c.at);
  }
}

TEST(ParseTimestampTest, RejectsTextThatIsNoInstantNamingTheProblem) {
  struct Case {
    std::string text;
    std::string problem;
  };
  const std::string shape = "must be an ISO 8601 time such as";
  const std::vector<Case> cases = {
      {"", shape},
      {"1795511702123456", shape},
      {"2026-11-24", shape},
      {"2026-11-24T09:15Z", shape},
      {"2026-11-24 09:15:02Z", shape},
      {"2026-11-24T09:15:02", shape},
      {"2026-11-24T09:15:02.Z", shape},
      {"2026-11-24T09:15:02.123456", shape},
      {"2026-11-24T09:15:02.123456ZZ", shape},
      {"2026-11-24T09:15:02.123456Z ", shape},
      {" 2026-11-24T09:15:02.123456Z", shape},
      {"2026-11-24T09:15:02+01", shape},
      {"2026-11-24T09:15:02+0100", shape},
      {"26-11-24T09:15:02Z", shape},
      {"2026-1-24T09:15:02Z", shape},
      {"+2026-11-24T09:15:02Z", shape},
      {"2026-11-24T09:15:02.1234567Z", "more than 6 fraction digits"},
      {"2026-11-24T09:15:02.123456789Z", "more than 6 fraction digits"},
      {"2026-02-29T00:00:00Z", "no such date"},
      {"2026-13-01T00:00:00Z", "no such date"},
      {"2026-00-01T00:00:00Z", "no such date"},
      {"2026-11-31T00:00:00Z", "no such date"},
      {"2026-11-00T00:00:00Z", "no such date"},
      {"2026-11-24T24:00:00Z", "no such time of day"},
      {"2026-11-24T09:60:00Z", "no such time of day"},
      {"2016-12-31T23:59:60Z", "no such time of day"},
      {"2026-11-24T09:15:02+24:00", "no such UTC offset"},
      {"2026-11-24T09:15:02+01:60", "no such UTC offset"},
      {"0000-01-01T00:59:59.999999+01:00", "outside the years 0000 to 9999"},
      {"9999-12-31T23:59:59.999999-00:01", "outside the years 0000 to 9999"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("\"" + c.text + "\"");
    const StatusOr<Micros> parsed = parse_timestamp(c.text);
    ASSERT_FALSE(parsed.ok()) << *parsed;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message().rfind("time \"" + c.text + "\": ", 0), 0u)
        << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(c.problem), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ParseTimestampTest, RejectsEmbeddedNul) {
  EXPECT_FALSE(parse_timestamp(std::string("2026-11-24T09:15:02Z\0", 21)).ok());
  EXPECT_FALSE(parse_timestamp(std::string("2026-11-24T09:15:02\0Z", 21)).ok());
}

rc::Gen<Micros> timestamp_in_range() {
  return rc::gen::oneOf(rc::gen::inRange<Micros>(kMinTimestamp, kMaxTimestamp + 1),
                        rc::gen::inRange<Micros>(-kMicrosPerDay, kMicrosPerDay),
                        rc::gen::inRange<Micros>(1'700'000'000'000'000, 1'900'000'000'000'000));
}

RC_GTEST_PROP(FormatTimestampProperty, ParseOfFormatIsIdentity, ()) {
  const Micros at = *timestamp_in_range();
  const StatusOr<Micros> parsed = parse_timestamp(format_timestamp(at));
  RC_ASSERT(parsed.ok());
  RC_ASSERT(*parsed == at);
}

RC_GTEST_PROP(FormatTimestampProperty, TextSortsAsTheInstantsDo, ()) {
  const Micros a = *timestamp_in_range();
  const Micros b = *timestamp_in_range();
  RC_ASSERT((a < b) == (format_timestamp(a) < format_timestamp(b)));
}

}  // namespace
}  // namespace sluice
