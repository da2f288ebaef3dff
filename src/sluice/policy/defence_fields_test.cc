// The defence fields of a policy document: rollout and over_limit_cache.
#include "sluice/policy/defence_fields.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sluice/policy/document.h"

namespace sluice::policy {
namespace {

ParsedPolicy parse(std::string_view extra, std::string_view mode = "enforce",
                   std::string_view limit = "{algorithm: fixed_window, limit: 5, window: 1m}") {
  return policy_from_text("name: p\napps: ['*']\nmode: " + std::string(mode) + "\nlimits: [" +
                          std::string(limit) + "]\n" + std::string(extra));
}

TEST(DefenceFieldsTest, RolloutReadsAPercentageAsNumberOrPercentString) {
  for (const auto& [text, expected] : {std::pair<std::string_view, double>{"rollout: 10%", 10},
                                       {"rollout: 12.5%", 12.5},
                                       {"rollout: 1", 1},
                                       {"rollout: 0", 0},
                                       {"rollout: 100", 100},
                                       {"rollout: \"0.5%\"", 0.5}}) {
    SCOPED_TRACE(text);
    ParsedPolicy parsed = parse(text);
    ASSERT_TRUE(parsed.errors.empty()) << join_errors(parsed.errors);
    ASSERT_TRUE(parsed.policy->rollout.has_value());
    EXPECT_DOUBLE_EQ(*parsed.policy->rollout, expected);
  }
  EXPECT_FALSE(parse("").policy->rollout.has_value());
}

TEST(DefenceFieldsTest, RolloutRefusesValuesOutsideZeroToHundredAndShadowMode) {
  for (std::string_view text :
       {"rollout: 101", "rollout: -1", "rollout: ten", "rollout: '%'", "rollout: true"}) {
    SCOPED_TRACE(text);
    ParsedPolicy parsed = parse(text);
    ASSERT_EQ(parsed.errors.size(), 1u);
    EXPECT_EQ(parsed.errors[0].field, "rollout");
    EXPECT_NE(parsed.errors[0].message.find("from 0 to 100"), std::string::npos);
  }
  ParsedPolicy shadow = parse("rollout: 10%", "shadow");
  ASSERT_EQ(shadow.errors.size(), 1u);
  EXPECT_EQ(shadow.errors[0].field, "rollout");
  EXPECT_NE(shadow.errors[0].message.find("mode enforce"), std::string::npos);
}

TEST(DefenceFieldsTest, OverLimitCacheIsABooleanRefusedTrueWithAConcurrencyLimit) {
  ParsedPolicy off = parse("over_limit_cache: false");
  ASSERT_TRUE(off.errors.empty()) << join_errors(off.errors);
  EXPECT_EQ(off.policy->over_limit_cache, false);
  ParsedPolicy bad = parse("over_limit_cache: 3");
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].field, "over_limit_cache");
  ParsedPolicy leased = parse("over_limit_cache: true", "enforce",
                              "{algorithm: concurrency, limit: 2, lease_ttl: 1s}");
  ASSERT_EQ(leased.errors.size(), 1u);
  EXPECT_EQ(leased.errors[0].field, "over_limit_cache");
  EXPECT_NE(leased.errors[0].message.find("concurrency"), std::string::npos);
}

TEST(DefenceFieldsTest, TheCacheIsOnByDefaultOnlyWhereEveryDenialIsExact) {
  EXPECT_TRUE(uses_over_limit_cache(*parse("").policy));
  EXPECT_FALSE(uses_over_limit_cache(*parse("over_limit_cache: false").policy));
  EXPECT_FALSE(uses_over_limit_cache(*parse("max_debt: 3").policy)) << "refunds free units early";
  EXPECT_TRUE(uses_over_limit_cache(*parse("max_debt: 3\nover_limit_cache: true").policy));
  EXPECT_FALSE(uses_over_limit_cache(
      *parse("", "enforce", "{algorithm: concurrency, limit: 2, lease_ttl: 1s}").policy));
}

TEST(DefenceFieldsTest, FieldsRoundTripThroughTheDocument) {
  ParsedPolicy parsed = parse("rollout: 12.5%\nover_limit_cache: false");
  ASSERT_TRUE(parsed.errors.empty()) << join_errors(parsed.errors);
  const nlohmann::json document = policy_to_json(*parsed.policy);
  EXPECT_EQ(document.at("rollout"), "12.5%");
  EXPECT_EQ(document.at("over_limit_cache"), false);
  ParsedPolicy again = policy_from_json(document, {.allow_audit_fields = true});
  ASSERT_TRUE(again.errors.empty()) << join_errors(again.errors);
  EXPECT_EQ(again.policy->rollout, 12.5);
  EXPECT_EQ(again.policy->over_limit_cache, false);
  EXPECT_FALSE(policy_to_json(*parse("").policy).contains("rollout"));
}

// The penalty box counts strikes in the store: defences that answer without it must stay off.
TEST(DefenceFieldsTest, APenaltyBoxKeepsTheCacheOffAndRefusesLeasesAndAnExplicitCache) {
  constexpr std::string_view kPenalty = "penalty: {after: 3, within: 1m, block: 5m, max: 1h}\n";
  ParsedPolicy boxed = parse(kPenalty);
  ASSERT_TRUE(boxed.policy) << join_errors(boxed.errors);
  EXPECT_FALSE(uses_over_limit_cache(*boxed.policy));
  for (const auto& [extra, field] : {std::pair<std::string_view, std::string_view>{
                                         "over_limit_cache: true\n", "over_limit_cache"},
                                     {"lease_tokens: 10\n", "lease_tokens"}}) {
    SCOPED_TRACE(extra);
    ParsedPolicy both = parse(std::string(kPenalty) + std::string(extra));
    ASSERT_EQ(both.errors.size(), 1u) << join_errors(both.errors);
    EXPECT_EQ(both.errors[0].field, field);
  }
  ParsedPolicy off = parse(std::string(kPenalty) + "over_limit_cache: false\n");
  EXPECT_TRUE(off.policy) << join_errors(off.errors);
}

TEST(DefenceFieldsTest, ACalendarWindowCannotBeLeased) {
  ParsedPolicy parsed =
      parse("lease_tokens: 10\n", "enforce", "{algorithm: fixed_window, limit: 5, calendar: day}");
  ASSERT_EQ(parsed.errors.size(), 1u) << join_errors(parsed.errors);
  EXPECT_EQ(parsed.errors[0].field, "lease_tokens");
  EXPECT_NE(parsed.errors[0].message.find("calendar"), std::string::npos);
}

}  // namespace
}  // namespace sluice::policy
