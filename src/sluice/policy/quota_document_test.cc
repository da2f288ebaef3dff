// Tests of the policy document's `penalty` and `retry_jitter` fields (penalty_document.h): YAML
// and JSON round trips, the defaults (escalate 2, max = block without escalation, quiet = max),
// and an error naming each bad field.
#include "sluice/policy/quota_document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sluice/policy/document.h"

namespace sluice::policy {
namespace {

using nlohmann::json;
using testing::ElementsAre;
using testing::HasSubstr;

constexpr Micros kSecond = kMicrosPerSecond;

const char* const kYaml = R"(
name: api.login
apps: [web]
limits:
  - {algorithm: fixed_window, limit: 5, window: 1m}
penalty: {after: 3, within: 1m, block: 5m, escalate: 2, max: 1h}
retry_jitter: 10%
)";

std::vector<std::string> fields_of(const std::vector<algorithm::FieldError>& errors) {
  std::vector<std::string> fields;
  for (const algorithm::FieldError& error : errors) fields.push_back(error.field);
  return fields;
}

TEST(PenaltyDocumentTest, ReadsTheIssuesExampleAndWritesItBack) {
  const ParsedPolicy parsed = policy_from_text(kYaml);
  ASSERT_TRUE(parsed.policy) << join_errors(parsed.errors);
  ASSERT_TRUE(parsed.policy->penalty);
  EXPECT_EQ(*parsed.policy->penalty, (algorithm::Penalty{.after = 3,
                                                         .within = 60 * kSecond,
                                                         .block = 300 * kSecond,
                                                         .escalate = 2,
                                                         .max = 3600 * kSecond,
                                                         .quiet = 3600 * kSecond}));
  EXPECT_EQ(parsed.policy->retry_jitter_percent, 10);
  const json written = policy_to_json(*parsed.policy);
  EXPECT_EQ(written["retry_jitter"], "10%");
  EXPECT_EQ(written["penalty"]["quiet"], "1h");
  const ParsedPolicy again = policy_from_json(written, {.allow_audit_fields = true});
  ASSERT_TRUE(again.policy) << join_errors(again.errors);
  EXPECT_EQ(again.policy->penalty, parsed.policy->penalty);
  EXPECT_EQ(again.policy->retry_jitter_percent, 10);
}

TEST(PenaltyDocumentTest, PoliciesWithoutThemExportAsBefore) {
  const ParsedPolicy parsed = policy_from_text(
      "name: plain\napps: [web]\nlimits: [{algorithm: fixed_window, limit: 5, window: 1m}]\n");
  ASSERT_TRUE(parsed.policy) << join_errors(parsed.errors);
  EXPECT_FALSE(parsed.policy->penalty);
  const json written = policy_to_json(*parsed.policy);
  EXPECT_FALSE(written.contains("penalty"));
  EXPECT_FALSE(written.contains("retry_jitter"));
}

TEST(PenaltyDocumentTest, WithoutEscalationMaxIsTheBlockAndQuietIsMax) {
  std::vector<algorithm::FieldError> errors;
  const std::optional<algorithm::Penalty> penalty = penalty_from_json(
      json{{"after", 1}, {"within", "10s"}, {"block", "30s"}, {"escalate", 1}}, errors);
  ASSERT_TRUE(penalty) << errors.size();
  EXPECT_EQ(penalty->max, 30 * kSecond);
  EXPECT_EQ(penalty->quiet, 30 * kSecond);
}

TEST(PenaltyDocumentTest, NamesEachBadField) {
  std::vector<algorithm::FieldError> errors;
  EXPECT_FALSE(penalty_from_json(
      json{{"after", "three"}, {"within", 60}, {"block", "5m"}, {"jail", true}}, errors));
  EXPECT_THAT(fields_of(errors),
              ElementsAre("penalty.jail", "penalty.after", "penalty.within", "penalty.max"));
  errors.clear();
  EXPECT_FALSE(penalty_from_json(
      json{{"after", 3}, {"within", "1m"}, {"block", "5m"}, {"max", "1m"}, {"escalate", 0}},
      errors));
  EXPECT_THAT(fields_of(errors), ElementsAre("penalty.escalate", "penalty.max"));
  errors.clear();
  EXPECT_FALSE(penalty_from_json(json::array(), errors));
  EXPECT_THAT(fields_of(errors), ElementsAre("penalty"));

  for (const json& bad : {json("10"), json(10), json("101%"), json("-1%"), json("1.5%")}) {
    errors.clear();
    EXPECT_FALSE(retry_jitter_from_json(bad, errors)) << bad.dump();
    EXPECT_THAT(fields_of(errors), ElementsAre("retry_jitter"));
  }
  errors.clear();
  EXPECT_EQ(retry_jitter_from_json(json("0%"), errors), 0);
  EXPECT_EQ(retry_jitter_from_json(json("100 %"), errors), 100);
  EXPECT_TRUE(errors.empty());

  // Through the document, errors keep their field names.
  const ParsedPolicy parsed = policy_from_text(
      "name: p\napps: [web]\nlimits: [{algorithm: fixed_window, limit: 5, window: 1m}]\n"
      "penalty: {after: 0, within: 1m, block: 5m, max: 1h}\nretry_jitter: lots\n");
  EXPECT_FALSE(parsed.policy);
  EXPECT_THAT(fields_of(parsed.errors), ElementsAre("penalty.after", "retry_jitter"));
  EXPECT_THAT(parsed.errors[0].message, HasSubstr("between 1 and 100"));
}

}  // namespace
}  // namespace sluice::policy

namespace sluice::policy {
namespace {

TEST(CalendarDocumentTest, ReadsACalendarWindowAndWritesItBack) {
  const ParsedPolicy parsed = policy_from_text(
      "name: plan.monthly\napps: [web]\n"
      "limits: [{algorithm: fixed_window, limit: 100000, calendar: month, "
      "time_zone: America/New_York}]\n");
  ASSERT_TRUE(parsed.policy) << join_errors(parsed.errors);
  const auto& window = std::get<algorithm::FixedWindow>(parsed.policy->limits[0]);
  ASSERT_TRUE(window.calendar);
  EXPECT_EQ(window.calendar->period, algorithm::CalendarPeriod::kMonth);
  EXPECT_EQ(window.calendar->time_zone, "America/New_York");
  EXPECT_EQ(window.window, algorithm::longest_period(algorithm::CalendarPeriod::kMonth));
  const json written = limit_to_json(window);
  EXPECT_EQ(written, (json{{"algorithm", "fixed_window"},
                           {"limit", 100000},
                           {"calendar", "month"},
                           {"time_zone", "America/New_York"}}));
  const ParsedPolicy again = policy_from_json(policy_to_json(*parsed.policy));
  ASSERT_TRUE(again.policy) << join_errors(again.errors);
  EXPECT_EQ(std::get<algorithm::FixedWindow>(again.policy->limits[0]).calendar, window.calendar);
  // time_zone defaults to UTC.
  const ParsedPolicy utc = policy_from_text(
      "name: p\napps: [web]\nlimits: [{algorithm: fixed_window, limit: 5, calendar: day}]\n");
  ASSERT_TRUE(utc.policy) << join_errors(utc.errors);
  EXPECT_EQ(std::get<algorithm::FixedWindow>(utc.policy->limits[0]).calendar->time_zone, "UTC");
}

TEST(CalendarDocumentTest, NamesEachBadField) {
  const ParsedPolicy parsed = policy_from_text(
      "name: p\napps: [web]\nlimits:\n"
      "  - {algorithm: fixed_window, limit: 5, calendar: fortnight, time_zone: Europe/Berlin}\n"
      "  - {algorithm: fixed_window, limit: 5, calendar: day, time_zone: Mars/Olympus_Mons}\n"
      "  - {algorithm: fixed_window, limit: 5, calendar: day, window: 1d}\n"
      "  - {algorithm: sliding_window, limit: 5, window: 1d, calendar: day}\n");
  EXPECT_FALSE(parsed.policy);
  EXPECT_THAT(fields_of(parsed.errors), ElementsAre("limits[0].calendar", "limits[1].time_zone",
                                                    "limits[2].window", "limits[3].calendar"));
  EXPECT_THAT(parsed.errors[1].message, HasSubstr("Mars/Olympus_Mons"));
}

}  // namespace
}  // namespace sluice::policy
