#include "sluice/algorithm/catalogue.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sluice/algorithm/catalogue_samples.h"
#include "sluice/algorithm/evaluate.h"

namespace sluice::algorithm {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kNow = 1'700'000'000'000'000;  // a realistic epoch

std::vector<Limit> samples() { return one_limit_of_each_kind(); }

TEST(CatalogueTest, RowsFollowLimitsAlternatives) {
  const std::vector<std::string> names = {"token_bucket", "gcra",           "leaky_bucket",
                                          "fixed_window", "sliding_window", "sliding_log",
                                          "concurrency"};
  ASSERT_EQ(algorithms().size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(algorithms()[i].name, names[i]);
    EXPECT_EQ(find_algorithm(names[i]), &algorithms()[i]);
  }
  EXPECT_EQ(find_algorithm("magic"), nullptr);
  for (const Limit& limit : samples()) {
    EXPECT_EQ(&algorithm_of(limit), &algorithms()[limit.index()]);
    EXPECT_EQ(algorithm_name(limit), algorithms()[limit.index()].name);
  }
}

// The size a verdict reports is the catalogue's, for every algorithm: what the store decides,
// what a degraded decision and the rate-limit headers say (service/limiter_test.cc, headers).
TEST(CatalogueTest, NominalSizeIsTheLimitEveryVerdictReports) {
  for (const Limit& limit : samples()) {
    SCOPED_TRACE(limit_words(limit));
    const Limit limits[] = {limit};
    LimitState states[] = {initial_state(limit, kNow)};
    for (const std::int64_t cost : {0, 1}) {
      const PolicyVerdict verdict = evaluate(limits, states, cost, kNow, "lease-1");
      EXPECT_EQ(verdict.verdict.limit, nominal_size(limit));
    }
  }
  EXPECT_EQ(nominal_size(LeakyBucket{.rate = 10, .period = kSecond, .max_delay = 500'000}), 6);
  EXPECT_EQ(nominal_size(LeakyBucket{.rate = 10, .period = kSecond, .max_delay = 0}), 1);
  EXPECT_EQ(nominal_size(Gcra{.rate = 10, .period = kSecond, .burst = 5}), 6);
}

TEST(CatalogueTest, ParameterValuesRoundTripThroughMakeLimit) {
  for (const Limit& limit : samples()) {
    if (calendar_of(limit) != nullptr) continue;  // a calendar is not a parameter
    SCOPED_TRACE(limit_words(limit));
    const Algorithm& row = algorithm_of(limit);
    const auto values = parameter_values(limit);
    for (std::size_t i = row.parameters.size(); i < values.size(); ++i) {
      EXPECT_FALSE(values[i].has_value()) << "a value beyond the row's parameters";
    }
    const Limit made = make_limit(row, std::span(values).first(row.parameters.size()));
    EXPECT_EQ(limit_words(made), limit_words(limit));
    EXPECT_EQ(parameter_values(made), values);
  }
}

TEST(CatalogueTest, OptionalParametersSayWhatAbsenceMeans) {
  for (const Algorithm& row : algorithms()) {
    for (const Parameter& parameter : row.parameters) {
      SCOPED_TRACE(std::string(row.name) + "." + std::string(parameter.name));
      EXPECT_TRUE(!parameter.required || !parameter.absent.has_value());
      EXPECT_EQ(parameter.type == ParameterType::kChoice, !parameter.choices.empty());
      EXPECT_TRUE(!parameter.required || !parameter.example.empty());
    }
  }
}

// Every "{name}" in the console's words names one of the row's parameters.
TEST(CatalogueTest, BriefWordsNameOnlyTheRowsParameters) {
  for (const Algorithm& row : algorithms()) {
    std::set<std::string, std::less<>> names;
    for (const Parameter& parameter : row.parameters) names.insert(std::string(parameter.name));
    EXPECT_FALSE(row.brief_words.empty()) << row.name;
    for (const Phrase& phrase : row.brief_words) {
      SCOPED_TRACE(std::string(row.name) + ": " + std::string(phrase.text));
      EXPECT_TRUE(phrase.when == PhraseWhen::kAlways || names.contains(phrase.field));
      EXPECT_TRUE(phrase.when != PhraseWhen::kBelow || names.contains(phrase.operand));
      std::string_view text = phrase.text;
      for (std::size_t open = text.find('{'); open != std::string_view::npos;
           open = text.find('{', open + 1)) {
        const std::size_t close = text.find('}', open);
        ASSERT_NE(close, std::string_view::npos);
        std::string_view name = text.substr(open + 1, close - open - 1);
        name = name.substr(0, name.find_first_of(":+"));
        EXPECT_TRUE(names.contains(name)) << name;
      }
    }
  }
}

TEST(CatalogueTest, ScriptKindsAreTheNumbersTheScriptsKnow) {
  std::set<int> numbers;
  std::set<std::string_view> names;
  for (const ScriptKindRow& row : script_kinds()) {
    numbers.insert(static_cast<int>(row.kind));
    names.insert(row.lua_name);
  }
  EXPECT_EQ(numbers, (std::set<int>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(names.size(), script_kinds().size());

  const std::vector<Limit> limits = samples();
  const std::vector<ScriptKind> kinds = {ScriptKind::kSmoothBucket,   ScriptKind::kIntervalBucket,
                                         ScriptKind::kSmoothBucket,   ScriptKind::kLeakyBucket,
                                         ScriptKind::kLeakyBucket,    ScriptKind::kFixedWindow,
                                         ScriptKind::kCalendarWindow, ScriptKind::kSlidingWindow,
                                         ScriptKind::kSlidingLog,     ScriptKind::kConcurrency};
  ASSERT_EQ(limits.size(), kinds.size());
  for (std::size_t i = 0; i < limits.size(); ++i) {
    EXPECT_EQ(script_record(limits[i], kNow).kind, kinds[i]) << limit_words(limits[i]);
  }
  // gcra goes as the smooth bucket it is identical to, starting full.
  const ScriptRecord gcra = script_record(limits[2], kNow);
  EXPECT_EQ(std::vector<std::int64_t>(std::begin(gcra.parameters), std::end(gcra.parameters)),
            (std::vector<std::int64_t>{6, 10, kSecond, 6}));
}

TEST(CatalogueTest, WindowsAreWhatTheSizeIsCountedOver) {
  const std::vector<Limit> limits = samples();
  const std::vector<Micros> units = {kSecond,
                                     60 * kSecond,
                                     kSecond,
                                     kSecond,
                                     kSecond,
                                     60 * kSecond,
                                     longest_period(CalendarPeriod::kDay),
                                     60 * kSecond,
                                     kSecond,
                                     0};
  const std::vector<std::optional<Micros>> quota_windows = {
      2 * kSecond,  60 * kSecond, 600'000,      600'000, 333'334,
      60 * kSecond, std::nullopt, 60 * kSecond, kSecond, std::nullopt};
  ASSERT_EQ(limits.size(), units.size());
  ASSERT_EQ(limits.size(), quota_windows.size());
  for (std::size_t i = 0; i < limits.size(); ++i) {
    SCOPED_TRACE(limit_words(limits[i]));
    EXPECT_EQ(unit_length(limits[i]), units[i]);
    EXPECT_EQ(quota_window(limits[i]), quota_windows[i]);
  }
  EXPECT_EQ(quota_window(TokenBucket{.capacity = INT64_MAX, .refill = 1, .period = 2}),
            std::nullopt);
}

TEST(CatalogueTest, OnlyConcurrencyHoldsLeases) {
  for (const Algorithm& row : algorithms()) {
    EXPECT_EQ(row.leases, row.name == "concurrency") << row.name;
    EXPECT_EQ(!row.quota_unit.empty(), row.leases) << row.name;
  }
}

}  // namespace
}  // namespace sluice::algorithm
