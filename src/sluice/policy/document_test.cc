#include "sluice/policy/document.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <variant>
#include <vector>

#include "sluice/algorithm/catalogue.h"

namespace sluice::algorithm {

// Found by argument-dependent lookup, so failing matchers print errors readably.
static void PrintTo(const FieldError& error, std::ostream* out) {
  *out << "{" << ::testing::PrintToString(error.field) << ", "
       << ::testing::PrintToString(error.message) << "}";
}

}  // namespace sluice::algorithm

namespace sluice::policy {
namespace {

using algorithm::Limit;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr Micros kEpoch = 1'700'000'000'000'000;

// The §5a example.
constexpr std::string_view kExampleYaml = R"(
name: orders.create            # [A-Za-z0-9._-]{1,128}
description: checkout writes
apps: [checkout, mobile]       # or ["*"]
mode: enforce                  # enforce | shadow
on_store_failure: fail_open    # fail_open | fail_closed | local
limits:
  - algorithm: token_bucket
    capacity: 100
    refill: 50
    period: 1s
  - algorithm: fixed_window
    limit: 1000
    window: 1h
)";

constexpr std::string_view kExampleJson = R"({
  "name": "orders.create",
  "description": "checkout writes",
  "apps": ["checkout", "mobile"],
  "mode": "enforce",
  "on_store_failure": "fail_open",
  "limits": [
    {"algorithm": "token_bucket", "capacity": 100, "refill": 50, "period": "1s"},
    {"algorithm": "fixed_window", "limit": 1000, "window": "1h"}
  ]
})";

bool same_limit(const Limit& a, const Limit& b) {
  return a.index() == b.index() && algorithm::parameter_values(a) == algorithm::parameter_values(b);
}

void expect_same_policy(const Policy& actual, const Policy& expected) {
  EXPECT_EQ(actual.name, expected.name);
  EXPECT_EQ(actual.description, expected.description);
  EXPECT_EQ(actual.apps, expected.apps);
  EXPECT_EQ(actual.mode, expected.mode);
  EXPECT_EQ(actual.on_store_failure, expected.on_store_failure);
  EXPECT_EQ(actual.enabled, expected.enabled);
  EXPECT_EQ(actual.version, expected.version);
  EXPECT_EQ(actual.created_by, expected.created_by);
  EXPECT_EQ(actual.updated_by, expected.updated_by);
  EXPECT_EQ(actual.created_at, expected.created_at);
  EXPECT_EQ(actual.updated_at, expected.updated_at);
  ASSERT_EQ(actual.limits.size(), expected.limits.size());
  for (std::size_t i = 0; i < actual.limits.size(); ++i) {
    EXPECT_TRUE(same_limit(actual.limits[i], expected.limits[i]))
        << "limits[" << i << "]: " << limit_to_json(actual.limits[i]).dump() << " vs "
        << limit_to_json(expected.limits[i]).dump();
  }
}

Policy parse_ok(std::string_view text, const DocumentOptions& options = {}) {
  ParsedPolicy parsed = policy_from_text(text, options);
  EXPECT_TRUE(parsed.errors.empty()) << join_errors(parsed.errors);
  EXPECT_TRUE(parsed.policy.has_value());
  return parsed.policy.value_or(Policy{});
}

std::vector<FieldError> errors_of(std::string_view text, const DocumentOptions& options = {}) {
  ParsedPolicy parsed = policy_from_text(text, options);
  EXPECT_FALSE(parsed.policy.has_value()) << "expected errors for:\n" << text;
  return parsed.errors;
}

std::vector<FieldError> json_errors(const json& document, const DocumentOptions& options = {}) {
  ParsedPolicy parsed = policy_from_json(document, options);
  EXPECT_FALSE(parsed.policy.has_value()) << "expected errors for " << document.dump();
  return parsed.errors;
}

// A valid JSON policy whose `patch` replaces or adds top-level fields (null removes one).
json valid_with(const json& patch) {
  json document = json::parse(kExampleJson);
  document.merge_patch(patch);
  return document;
}

// A valid policy whose only limit is `limit`.
json with_limit(const json& limit) {
  json document = json::parse(kExampleJson);
  document["limits"] = json::array({limit});
  return document;
}

MATCHER_P2(FieldErrorIs, field, message_matcher,
           "error of field " + ::testing::PrintToString(field) + " whose message " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  return arg.field == field &&
         ::testing::ExplainMatchResult(message_matcher, arg.message, result_listener);
}

TEST(PolicyDocumentTest, YamlAndJsonOfTheSamePolicyAreEqual) {
  const Policy from_yaml = parse_ok(kExampleYaml);
  const Policy from_json = parse_ok(kExampleJson);
  expect_same_policy(from_yaml, from_json);

  EXPECT_EQ(from_yaml.name, "orders.create");
  EXPECT_EQ(from_yaml.description, "checkout writes");
  EXPECT_THAT(from_yaml.apps, ElementsAre("checkout", "mobile"));
  EXPECT_EQ(from_yaml.mode, Mode::kEnforce);
  EXPECT_EQ(from_yaml.on_store_failure, FailureMode::kFailOpen);
  EXPECT_TRUE(from_yaml.enabled);
  ASSERT_EQ(from_yaml.limits.size(), 2u);
  EXPECT_TRUE(same_limit(from_yaml.limits[0],
                         algorithm::TokenBucket{.capacity = 100,
                                                .refill = 50,
                                                .period = kMicrosPerSecond,
                                                .refill_mode = algorithm::RefillMode::kSmooth}));
  EXPECT_TRUE(same_limit(from_yaml.limits[1],
                         algorithm::FixedWindow{.limit = 1000, .window = kMicrosPerHour}));
}

TEST(PolicyDocumentTest, OmittedOptionalFieldsTakeTheirDefaults) {
  const Policy policy = parse_ok(R"(
name: p
apps: ["*"]
limits:
  - {algorithm: token_bucket, capacity: 10, refill: 1, period: 1s}
  - {algorithm: gcra, rate: 10, period: 1s}
  - {algorithm: leaky_bucket, rate: 10, period: 1s}
)");
  EXPECT_EQ(policy.description, "");
  EXPECT_EQ(policy.mode, Mode::kEnforce);
  EXPECT_EQ(policy.on_store_failure, FailureMode::kFailOpen);
  EXPECT_TRUE(policy.enabled);
  EXPECT_EQ(policy.version, 0);
  EXPECT_EQ(policy.created_by, "");
  EXPECT_EQ(policy.created_at, 0);
  ASSERT_EQ(policy.limits.size(), 3u);
  const auto& bucket = std::get<algorithm::TokenBucket>(policy.limits[0]);
  EXPECT_EQ(bucket.refill_mode, algorithm::RefillMode::kSmooth);
  EXPECT_EQ(bucket.initial, std::nullopt);
  EXPECT_EQ(std::get<algorithm::Gcra>(policy.limits[1]).burst, 0);
  EXPECT_EQ(std::get<algorithm::LeakyBucket>(policy.limits[2]).max_delay, 0);
}

TEST(PolicyDocumentTest, JsonRoundTripPreservesEveryAlgorithm) {
  const std::vector<Limit> limits = {
      algorithm::TokenBucket{.capacity = 100, .refill = 50, .period = kMicrosPerSecond},
      algorithm::TokenBucket{.capacity = 10,
                             .refill = 3,
                             .period = 1'500 * kMicrosPerMilli,
                             .refill_mode = algorithm::RefillMode::kInterval,
                             .initial = 0},
      algorithm::TokenBucket{.capacity = 10, .refill = 1, .period = 7, .initial = 10},
      algorithm::Gcra{.rate = 5, .period = kMicrosPerMinute, .burst = 9},
      algorithm::Gcra{.rate = 1, .period = 1, .burst = 0},
      algorithm::LeakyBucket{.rate = 20, .period = kMicrosPerSecond, .max_delay = 250'000},
      algorithm::LeakyBucket{.rate = 1, .period = kMicrosPerDay, .max_delay = 0},
      algorithm::FixedWindow{.limit = 1000, .window = kMicrosPerHour},
      algorithm::SlidingWindow{.limit = 60, .window = kMicrosPerMinute},
      algorithm::SlidingLog{.limit = 10'000, .window = 90 * kMicrosPerSecond},
      algorithm::Concurrency{.limit = 8, .lease_ttl = 30 * kMicrosPerSecond},
  };
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const Policy policy{.name = "round.trip-" + std::to_string(i),
                        .description = "limit " + std::to_string(i),
                        .apps = {"checkout", "*"},
                        .mode = i % 2 == 0 ? Mode::kShadow : Mode::kEnforce,
                        .on_store_failure = static_cast<FailureMode>(i % 3),
                        .enabled = i % 2 == 1,
                        .limits = {limits[i], limits[(i + 1) % limits.size()]},
                        .version = static_cast<std::int64_t>(i + 1),
                        .created_by = "alice",
                        .updated_by = "bob",
                        .created_at = kEpoch,
                        .updated_at = kEpoch + 1};
    const json document = policy_to_json(policy);
    SCOPED_TRACE(document.dump());
    ParsedPolicy parsed = policy_from_json(document);
    ASSERT_TRUE(parsed.policy.has_value()) << join_errors(parsed.errors);
    expect_same_policy(*parsed.policy, policy);
    // Also through text, as export/import does.
    expect_same_policy(parse_ok(document.dump(2)), policy);
  }
}

TEST(PolicyDocumentTest, ParsedPolicyHasEitherAPolicyOrErrors) {
  ParsedPolicy good = policy_from_text(kExampleJson);
  EXPECT_TRUE(good.policy.has_value());
  EXPECT_TRUE(good.errors.empty());
  ParsedPolicy bad = policy_from_json(valid_with({{"name", nullptr}}));
  EXPECT_FALSE(bad.policy.has_value());
  EXPECT_FALSE(bad.errors.empty());
}

TEST(PolicyDocumentTest, RejectsMissingName) {
  EXPECT_THAT(json_errors(valid_with({{"name", nullptr}})),
              ElementsAre(FieldErrorIs("name", "is required")));
}

TEST(PolicyDocumentTest, MaxDebtRoundTripsAndIsOmittedWhenZero) {
  const ParsedPolicy parsed = policy_from_json(valid_with({{"max_debt", 25}}));
  ASSERT_TRUE(parsed.policy.has_value()) << join_errors(parsed.errors);
  EXPECT_EQ(parsed.policy->max_debt, 25);
  EXPECT_EQ(policy_to_json(*parsed.policy)["max_debt"], 25);
  const ParsedPolicy plain = policy_from_json(valid_with(json::object()));
  ASSERT_TRUE(plain.policy.has_value());
  EXPECT_EQ(plain.policy->max_debt, 0);
  EXPECT_FALSE(policy_to_json(*plain.policy).contains("max_debt"));
}

TEST(PolicyDocumentTest, RejectsNegativeOrTooDeepMaxDebt) {
  EXPECT_THAT(json_errors(valid_with({{"max_debt", -1}})),
              ElementsAre(FieldErrorIs("max_debt", "must not be negative")));
  EXPECT_THAT(json_errors(valid_with({{"max_debt", "ten"}})),
              ElementsAre(FieldErrorIs("max_debt", "must be an integer")));
  json log = with_limit({{"algorithm", "sliding_log"}, {"limit", 10000}, {"window", "1s"}});
  log["max_debt"] = 1;
  EXPECT_THAT(json_errors(log), ElementsAre(FieldErrorIs("max_debt", HasSubstr("limits[0]"))));
}

TEST(PolicyDocumentTest, LeaseFieldsRoundTripAndAreOmittedWhenDefault) {
  const ParsedPolicy parsed =
      policy_from_json(valid_with({{"lease_tokens", 50}, {"lease_period", "250ms"}}));
  ASSERT_TRUE(parsed.policy.has_value()) << join_errors(parsed.errors);
  EXPECT_EQ(parsed.policy->lease_tokens, 50);
  EXPECT_EQ(parsed.policy->lease_period, 250 * kMicrosPerMilli);
  EXPECT_EQ(policy_to_json(*parsed.policy)["lease_tokens"], 50);
  EXPECT_EQ(policy_to_json(*parsed.policy)["lease_period"], "250ms");
  const ParsedPolicy plain = policy_from_json(valid_with(json::object()));
  ASSERT_TRUE(plain.policy.has_value());
  EXPECT_EQ(plain.policy->lease_tokens, 0);
  EXPECT_EQ(plain.policy->lease_period, kDefaultLeasePeriod);
  EXPECT_FALSE(policy_to_json(*plain.policy).contains("lease_tokens"));
  EXPECT_FALSE(policy_to_json(*plain.policy).contains("lease_period"));
}

TEST(PolicyDocumentTest, RejectsLeaseTokensOutOfRangeOrOnAlgorithmsThatCannotLease) {
  EXPECT_THAT(json_errors(valid_with({{"lease_tokens", -1}})),
              ElementsAre(FieldErrorIs("lease_tokens", HasSubstr("between 0 (off) and"))));
  EXPECT_THAT(json_errors(valid_with({{"lease_tokens", 1'000'001}})),
              ElementsAre(FieldErrorIs("lease_tokens", HasSubstr("between 0 (off) and"))));
  EXPECT_THAT(json_errors(valid_with({{"lease_period", "0s"}})),
              ElementsAre(FieldErrorIs("lease_period", "must be between 1ms and 60s")));
  EXPECT_THAT(json_errors(valid_with({{"lease_period", "61s"}})),
              ElementsAre(FieldErrorIs("lease_period", "must be between 1ms and 60s")));
  for (const json& limit : {json{{"algorithm", "sliding_log"}, {"limit", 10}, {"window", "1s"}},
                            json{{"algorithm", "concurrency"}, {"limit", 10}, {"lease_ttl", "1s"}},
                            json{{"algorithm", "leaky_bucket"}, {"rate", 10}, {"period", "1s"}}}) {
    SCOPED_TRACE(limit.dump());
    json document = with_limit(limit);
    document["lease_tokens"] = 5;
    EXPECT_THAT(json_errors(document),
                ElementsAre(FieldErrorIs("lease_tokens", HasSubstr("cannot be leased"))));
  }
  json window = with_limit({{"algorithm", "sliding_window"}, {"limit", 10}, {"window", "1s"}});
  window["lease_tokens"] = 5;
  EXPECT_TRUE(policy_from_json(window).policy.has_value());
}

TEST(PolicyDocumentTest, RejectsMissingApps) {
  EXPECT_THAT(json_errors(valid_with({{"apps", nullptr}})),
              ElementsAre(FieldErrorIs("apps", "is required")));
}

TEST(PolicyDocumentTest, RejectsMissingLimits) {
  EXPECT_THAT(json_errors(valid_with({{"limits", nullptr}})),
              ElementsAre(FieldErrorIs("limits", "is required")));
}

TEST(PolicyDocumentTest, RejectsExplicitNullRequiredField) {
  EXPECT_THAT(errors_of(R"({"name": null, "apps": ["*"],
                            "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1s"}]})"),
              ElementsAre(FieldErrorIs("name", "is required")));
}

TEST(PolicyDocumentTest, RejectsEmptyLimits) {
  EXPECT_THAT(json_errors(valid_with({{"limits", json::array()}})),
              ElementsAre(FieldErrorIs("limits", "must be a non-empty list of limits")));
  EXPECT_THAT(json_errors(valid_with({{"limits", "fixed_window"}})),
              ElementsAre(FieldErrorIs("limits", "must be a non-empty list of limits")));
}

TEST(PolicyDocumentTest, RejectsNameWithForbiddenCharactersOrLength) {
  struct Case {
    std::string name;
    std::string message;
  };
  const std::string charset = "may contain only letters, digits, '.', '_' and '-'";
  const std::vector<Case> cases = {
      {"orders create", charset},
      {"orders:create", charset},
      {"orders/create", charset},
      {"{orders}", charset},
      {"订单", charset},
      {"", "must not be empty"},
      {std::string(129, 'a'), "must be at most 128 characters"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(json_errors(valid_with({{"name", c.name}})),
                ElementsAre(FieldErrorIs("name", c.message)));
  }
  EXPECT_TRUE(policy_from_json(valid_with({{"name", std::string(128, 'a')}})).policy.has_value());
}

TEST(PolicyDocumentTest, RejectsNonStringName) {
  EXPECT_THAT(json_errors(valid_with({{"name", 42}})),
              ElementsAre(FieldErrorIs("name", "must be a string")));
}

TEST(PolicyDocumentTest, RejectsEmptyApps) {
  EXPECT_THAT(json_errors(valid_with({{"apps", json::array()}})),
              ElementsAre(FieldErrorIs("apps", HasSubstr("must be a non-empty list"))));
}

TEST(PolicyDocumentTest, RejectsAppsThatAreNotAList) {
  EXPECT_THAT(json_errors(valid_with({{"apps", "checkout"}})),
              ElementsAre(FieldErrorIs("apps", HasSubstr("must be a non-empty list"))));
}

TEST(PolicyDocumentTest, RejectsBadAppNameByIndex) {
  EXPECT_THAT(json_errors(valid_with({{"apps", {"checkout", "check out", "a:b", "**"}}})),
              ElementsAre(FieldErrorIs("apps[1]", HasSubstr("must be \"*\" or 1-128 letters")),
                          FieldErrorIs("apps[2]", HasSubstr("must be \"*\" or 1-128 letters")),
                          FieldErrorIs("apps[3]", HasSubstr("must be \"*\" or 1-128 letters"))));
  EXPECT_THAT(json_errors(valid_with({{"apps", {"checkout", 7}}})),
              ElementsAre(FieldErrorIs("apps[1]", "must be a string")));
}

TEST(PolicyDocumentTest, RejectsUnknownTopLevelField) {
  EXPECT_THAT(json_errors(valid_with({{"limitz", json::array()}})),
              ElementsAre(FieldErrorIs("limitz", "unknown field")));
}

TEST(PolicyDocumentTest, RejectsUnknownLimitField) {
  EXPECT_THAT(
      json_errors(with_limit(
          {{"algorithm", "token_bucket"}, {"capacty", 100}, {"refill", 1}, {"period", "1s"}})),
      ElementsAre(FieldErrorIs("limits[0].capacty", "unknown field for token_bucket"),
                  FieldErrorIs("limits[0].capacity", "is required")));
  // A parameter of another algorithm is unknown too.
  EXPECT_THAT(json_errors(with_limit(
                  {{"algorithm", "fixed_window"}, {"limit", 1}, {"window", "1s"}, {"burst", 2}})),
              ElementsAre(FieldErrorIs("limits[0].burst", "unknown field for fixed_window")));
}

TEST(PolicyDocumentTest, RejectsMistypedLimitFields) {
  struct Case {
    std::string name;
    json limit;
    std::string field;
    std::string message;
  };
  const std::string duration_message =
      "must be a duration string such as \"250ms\", \"1s\" or \"5m\"";
  const std::vector<Case> cases = {
      {"string capacity",
       {{"algorithm", "token_bucket"}, {"capacity", "100"}, {"refill", 1}, {"period", "1s"}},
       "limits[0].capacity",
       "must be an integer"},
      {"fractional capacity",
       {{"algorithm", "token_bucket"}, {"capacity", 1.5}, {"refill", 1}, {"period", "1s"}},
       "limits[0].capacity",
       "must be an integer"},
      {"integer period without unit",
       {{"algorithm", "token_bucket"}, {"capacity", 100}, {"refill", 1}, {"period", 60}},
       "limits[0].period",
       duration_message},
      {"bool limit",
       {{"algorithm", "fixed_window"}, {"limit", true}, {"window", "1s"}},
       "limits[0].limit",
       "must be an integer"},
      {"list rate",
       {{"algorithm", "gcra"}, {"rate", {1}}, {"period", "1s"}},
       "limits[0].rate",
       "must be an integer"},
      {"integer lease_ttl",
       {{"algorithm", "concurrency"}, {"limit", 1}, {"lease_ttl", 30}},
       "limits[0].lease_ttl",
       duration_message},
      {"numeric refill_mode",
       {{"algorithm", "token_bucket"},
        {"capacity", 1},
        {"refill", 1},
        {"period", "1s"},
        {"refill_mode", 1}},
       "limits[0].refill_mode",
       "must be a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(json_errors(with_limit(c.limit)), ElementsAre(FieldErrorIs(c.field, c.message)));
  }
}

TEST(PolicyDocumentTest, RejectsMistypedTopLevelFields) {
  EXPECT_THAT(json_errors(valid_with({{"description", 5}})),
              ElementsAre(FieldErrorIs("description", "must be a string")));
  EXPECT_THAT(json_errors(valid_with({{"enabled", "yes"}})),
              ElementsAre(FieldErrorIs("enabled", "must be true or false")));
  EXPECT_THAT(json_errors(valid_with({{"mode", true}})),
              ElementsAre(FieldErrorIs("mode", "must be a string")));
}

TEST(PolicyDocumentTest, RejectsIntegersBeyondInt64) {
  for (const std::string number :
       {"9223372036854775808", "18446744073709551615", "99999999999999999999"}) {
    SCOPED_TRACE(number);
    const std::string text =
        R"({"name": "p", "apps": ["*"], "limits": [{"algorithm": "fixed_window", "limit": )" +
        number + R"(, "window": "1s"}]})";
    const std::vector<FieldError> errors = errors_of(text);
    ASSERT_EQ(errors.size(), 1u) << join_errors(errors);
    EXPECT_EQ(errors[0].field, "limits[0].limit");
  }
  EXPECT_THAT(errors_of(R"({"name": "p", "apps": ["*"], "version": 18446744073709551615,
      "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1s"}]})"),
              ElementsAre(FieldErrorIs("version", "is too large")));
  EXPECT_THAT(json_errors(with_limit({{"algorithm", "token_bucket"},
                                      {"capacity", 10},
                                      {"refill", 1},
                                      {"period", "1s"},
                                      {"initial", std::uint64_t{18446744073709551615u}}})),
              ElementsAre(FieldErrorIs("limits[0].initial", "is too large")));
  EXPECT_EQ(parse_ok(R"({"name": "p", "apps": ["*"], "version": 9223372036854775807,
      "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1s"}]})")
                .version,
            INT64_MAX);
}

TEST(PolicyDocumentTest, RejectsLimitThatIsNotAnObject) {
  for (const json& limit :
       {json(true), json(5), json("token_bucket"), json(nullptr), json::array()}) {
    SCOPED_TRACE(limit.dump());
    EXPECT_THAT(json_errors(with_limit(limit)),
                ElementsAre(FieldErrorIs("limits[0]", HasSubstr("must be an object"))));
  }
}

TEST(PolicyDocumentTest, RejectsUnknownAlgorithm) {
  EXPECT_THAT(json_errors(with_limit({{"algorithm", "token-bucket"}, {"capacity", 1}})),
              ElementsAre(FieldErrorIs(
                  "limits[0].algorithm",
                  "must be one of token_bucket, gcra, leaky_bucket, fixed_window, sliding_window, "
                  "sliding_log, concurrency (got \"token-bucket\")")));
}

TEST(PolicyDocumentTest, RejectsMissingAlgorithm) {
  EXPECT_THAT(json_errors(with_limit({{"limit", 1}, {"window", "1s"}})),
              ElementsAre(FieldErrorIs("limits[0].algorithm", "is required")));
}

TEST(PolicyDocumentTest, RejectsNullAlgorithmInsteadOfDroppingTheLimit) {
  EXPECT_THAT(json_errors(with_limit({{"algorithm", nullptr}, {"limit", 1}, {"window", "1s"}})),
              ElementsAre(FieldErrorIs("limits[0].algorithm", "is required")));
  EXPECT_THAT(errors_of(R"(
name: p
apps: ["*"]
limits:
  - {algorithm: fixed_window, limit: 1, window: 1s}
  - {algorithm: ~, limit: 5, window: 1s}
)"),
              ElementsAre(FieldErrorIs("limits[1].algorithm", "is required")));
}

TEST(PolicyDocumentTest, RejectsBadModeValue) {
  EXPECT_THAT(
      json_errors(valid_with({{"mode", "enforcing"}})),
      ElementsAre(FieldErrorIs("mode", "must be one of enforce, shadow (got \"enforcing\")")));
}

TEST(PolicyDocumentTest, RejectsBadOnStoreFailureValue) {
  EXPECT_THAT(json_errors(valid_with({{"on_store_failure", "fail-open"}})),
              ElementsAre(FieldErrorIs("on_store_failure",
                                       "must be one of fail_open, fail_closed, local, split "
                                       "(got \"fail-open\")")));
}

TEST(PolicyDocumentTest, RejectsBadRefillModeValue) {
  EXPECT_THAT(json_errors(with_limit({{"algorithm", "token_bucket"},
                                      {"capacity", 1},
                                      {"refill", 1},
                                      {"period", "1s"},
                                      {"refill_mode", "burst"}})),
              ElementsAre(FieldErrorIs("limits[0].refill_mode",
                                       "must be one of smooth, interval (got \"burst\")")));
}

TEST(PolicyDocumentTest, AcceptsEveryModeAndFailureModeValue) {
  EXPECT_EQ(policy_from_json(valid_with({{"mode", "shadow"}})).policy->mode, Mode::kShadow);
  EXPECT_EQ(policy_from_json(valid_with({{"mode", "enforce"}})).policy->mode, Mode::kEnforce);
  EXPECT_EQ(
      policy_from_json(valid_with({{"on_store_failure", "fail_open"}})).policy->on_store_failure,
      FailureMode::kFailOpen);
  EXPECT_EQ(
      policy_from_json(valid_with({{"on_store_failure", "fail_closed"}})).policy->on_store_failure,
      FailureMode::kFailClosed);
  EXPECT_EQ(policy_from_json(valid_with({{"on_store_failure", "local"}})).policy->on_store_failure,
            FailureMode::kLocal);
  EXPECT_EQ(policy_from_json(valid_with({{"on_store_failure", "split"}})).policy->on_store_failure,
            FailureMode::kSplit);
}

TEST(PolicyDocumentTest, RejectsInvalidDurationsNamingFieldAndInput) {
  struct Case {
    json limit;
    std::string field;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"algorithm", "fixed_window"}, {"limit", 1}, {"window", "1.5s"}},
       "limits[0].window",
       "duration \"1.5s\": unknown unit"},
      {{{"algorithm", "sliding_window"}, {"limit", 1}, {"window", "5 s"}},
       "limits[0].window",
       "duration \"5 s\": unknown unit"},
      {{{"algorithm", "concurrency"}, {"limit", 1}, {"lease_ttl", "-1s"}},
       "limits[0].lease_ttl",
       "duration \"-1s\": must be a non-negative integer"},
      {{{"algorithm", "gcra"}, {"rate", 1}, {"period", "60"}},
       "limits[0].period",
       "duration \"60\": missing unit"},
      {{{"algorithm", "leaky_bucket"}, {"rate", 1}, {"period", "1s"}, {"max_delay", ""}},
       "limits[0].max_delay",
       "duration \"\": must be a non-negative integer"},
      {{{"algorithm", "sliding_log"}, {"limit", 1}, {"window", "9223372036854775808us"}},
       "limits[0].window",
       "duration \"9223372036854775808us\": too large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.limit.dump());
    EXPECT_THAT(json_errors(with_limit(c.limit)),
                ElementsAre(FieldErrorIs(c.field, HasSubstr(c.message))));
  }
}

TEST(PolicyDocumentTest, ReportsValidationErrorsWithTheLimitPrefix) {
  const std::vector<FieldError> errors = errors_of(R"(
name: p
apps: ["*"]
limits:
  - {algorithm: token_bucket, capacity: 10, refill: 1, period: 1s}
  - {algorithm: fixed_window, limit: 10, window: 0s}
)");
  EXPECT_EQ(join_errors(errors), "limits[1].window: must be greater than 0");
}

TEST(PolicyDocumentTest, ReportsEveryValidationErrorOfOneLimit) {
  EXPECT_THAT(
      json_errors(with_limit(
          {{"algorithm", "token_bucket"}, {"capacity", 0}, {"refill", -1}, {"period", "0s"}})),
      ElementsAre(FieldErrorIs("limits[0].capacity", "must be greater than 0"),
                  FieldErrorIs("limits[0].refill", "must be greater than 0"),
                  FieldErrorIs("limits[0].period", "must be greater than 0")));
}

TEST(PolicyDocumentTest, AppliesTheGivenValidationOptions) {
  const json document =
      with_limit({{"algorithm", "sliding_log"}, {"limit", 10'001}, {"window", "1s"}});
  EXPECT_THAT(json_errors(document),
              ElementsAre(FieldErrorIs("limits[0].limit", "must be at most 10000")));
  const DocumentOptions generous{.limits = {.sliding_log_max_limit = 20'000}};
  EXPECT_TRUE(policy_from_json(document, generous).policy.has_value());
}

TEST(PolicyDocumentTest, ReportsSeveralProblemsAtOnce) {
  const std::vector<FieldError> errors = errors_of(R"(
name: "bad name"
apps: []
mode: loud
colour: blue
limits:
  - {algorithm: token_bucket, capacty: 10, refill: 1, period: 1s}
  - {algorithm: fixed_window, limit: 10, window: 0s}
  - {algorithm: leaky}
  - {algorithm: gcra, rate: 1, period: 1.5s}
)");
  EXPECT_THAT(errors, ::testing::UnorderedElementsAre(
                          FieldErrorIs("colour", "unknown field"),
                          FieldErrorIs("name", HasSubstr("may contain only")),
                          FieldErrorIs("apps", HasSubstr("non-empty list")),
                          FieldErrorIs("mode", HasSubstr("must be one of enforce, shadow")),
                          FieldErrorIs("limits[0].capacty", "unknown field for token_bucket"),
                          FieldErrorIs("limits[0].capacity", "is required"),
                          FieldErrorIs("limits[1].window", "must be greater than 0"),
                          FieldErrorIs("limits[2].algorithm", HasSubstr("(got \"leaky\")")),
                          FieldErrorIs("limits[3].period", HasSubstr("unknown unit"))));
}

TEST(PolicyDocumentTest, MalformedJsonGivesOneClearError) {
  for (const std::string_view text :
       {R"({"name": "p",)", R"({"name": "p", "apps": ["*"]}})", R"({name: p})", "{"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(errors_of(text), ElementsAre(FieldErrorIs("", "not valid JSON")));
  }
}

TEST(PolicyDocumentTest, MalformedYamlGivesOneClearError) {
  for (const std::string_view text :
       {"name: [unclosed", "name: p\n  apps: - x\n", "a: b: c", "name: p\n\tapps: x\n"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(errors_of(text), ElementsAre(FieldErrorIs("", HasSubstr("not valid YAML: "))));
  }
}

// Found by fuzz/policy_document_fuzzer: yaml-cpp passes bytes that are not UTF-8 through, and a
// description holding them made every JSON answer about the policy throw.
TEST(PolicyDocumentTest, YamlThatIsNotUtf8IsRefusedBeforeAnythingStoresIt) {
  const std::string text =
      "name: p\ndescription: caf\xe9 \xbf\napps: [\"*\"]\nlimits:\n  - algorithm: "
      "fixed_window\n    limit: 1\n    window: 1s\n";
  EXPECT_THAT(errors_of(text),
              ElementsAre(FieldErrorIs("", "not valid YAML: the text is not UTF-8")));
  const ParsedPolicies several = policies_from_text(text);
  EXPECT_TRUE(several.policies.empty());
  EXPECT_THAT(several.errors,
              ElementsAre(FieldErrorIs("", "not valid YAML: the text is not UTF-8")));
  EXPECT_TRUE(policy_from_text("name: p\ndescription: café\napps: [\"*\"]\nlimits:\n  - algorithm: "
                               "fixed_window\n    limit: 1\n    window: 1s\n")
                  .errors.empty());
}

TEST(PolicyDocumentTest, YamlAliasesThatExpandBeyondAnyPolicyFileAreRefused) {
  // Each level doubles the one before: 2^30 values from under 400 bytes (found by fuzzing).
  std::string text = "a0: &a0 [x, x]\n";
  for (int level = 1; level <= 30; ++level) {
    const std::string previous = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [" + previous + ", " +
            previous + "]\n";
  }
  const std::string too_many = "not valid YAML: more than 200000 values once aliases are expanded";
  EXPECT_THAT(errors_of(text), ElementsAre(FieldErrorIs("", too_many)));
  EXPECT_THAT(policies_from_text(text).errors, ElementsAre(FieldErrorIs("", too_many)));
  // Aliases themselves are fine.
  const ParsedPolicy aliased = policy_from_text(
      "name: p\napps: [\"*\"]\nlimits:\n  - {algorithm: fixed_window, limit: 1, window: &w 1s}\n"
      "  - {algorithm: sliding_window, limit: 5, window: *w}\n");
  EXPECT_TRUE(aliased.errors.empty()) << join_errors(aliased.errors);
}

TEST(PolicyDocumentTest, YamlKeysThatAreNotTextAndNumbersBeyondRangeAreFieldErrors) {
  EXPECT_THAT(errors_of("name: p\n? [a, b]\n: 1\n"),
              ElementsAre(FieldErrorIs("", HasSubstr("the key at line 2 is not text"))));
  const std::string huge(400, '9');
  const std::vector<FieldError> errors =
      errors_of("name: p\napps: [\"*\"]\nlimits:\n  - {algorithm: fixed_window, limit: " + huge +
                ", window: 1s}\n");
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0].field, "limits[0].limit");
}

TEST(PolicyDocumentTest, RejectsDocumentThatIsNotAnObject) {
  for (const std::string_view text : {"", "42", "- name: p", "just text", "[1, 2]", "null"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(errors_of(text), ElementsAre(FieldErrorIs("", "a policy must be an object")));
  }
}

TEST(PolicyDocumentTest, RefusesAuditFieldsWhenNotAllowed) {
  const DocumentOptions no_audit{.allow_audit_fields = false};
  const std::vector<std::pair<std::string, json>> audit = {{"version", 3},
                                                           {"created_by", "alice"},
                                                           {"updated_by", "bob"},
                                                           {"created_at", kEpoch},
                                                           {"updated_at", kEpoch}};
  for (const auto& [field, value] : audit) {
    SCOPED_TRACE(field);
    EXPECT_THAT(json_errors(valid_with({{field, value}}), no_audit),
                ElementsAre(FieldErrorIs(field, "is maintained by Sluice and cannot be set")));
  }
  EXPECT_TRUE(policy_from_json(valid_with(json::object()), no_audit).policy.has_value());
}

TEST(PolicyDocumentTest, KeepsAuditFieldsWhenAllowed) {
  const Policy policy = policy_from_json(valid_with({{"version", 3},
                                                     {"created_by", "alice"},
                                                     {"updated_by", "bob"},
                                                     {"created_at", kEpoch},
                                                     {"updated_at", kEpoch + 1}}))
                            .policy.value();
  EXPECT_EQ(policy.version, 3);
  EXPECT_EQ(policy.created_by, "alice");
  EXPECT_EQ(policy.updated_by, "bob");
  EXPECT_EQ(policy.created_at, kEpoch);
  EXPECT_EQ(policy.updated_at, kEpoch + 1);
}

// `sluice policy get` prints the audit times as ISO 8601 text in YAML; the edited document must
// read back. Programs' JSON keeps microseconds.
TEST(PolicyDocumentTest, ReadsAuditTimesAsIsoTextOrMicroseconds) {
  const Policy from_json =
      policy_from_json(valid_with({{"created_at", "2023-11-14T22:13:20.000000Z"},
                                   {"updated_at", "2023-11-14T23:13:20.000001+01:00"}}))
          .policy.value();
  EXPECT_EQ(from_json.created_at, kEpoch);
  EXPECT_EQ(from_json.updated_at, kEpoch + 1);
  for (const std::string_view times :
       {"created_at: \"2023-11-14T22:13:20.000000Z\"\nupdated_at: 2023-11-14T22:13:20.000001Z\n",
        "created_at: 1700000000000000\nupdated_at: 1700000000000001\n"}) {
    SCOPED_TRACE(times);
    const Policy from_yaml =
        parse_ok(std::string(times) +
                 "name: p\n"
                 "apps: ['*']\n"
                 "limits: [{algorithm: fixed_window, limit: 1, window: 1s}]\n");
    EXPECT_EQ(from_yaml.created_at, kEpoch);
    EXPECT_EQ(from_yaml.updated_at, kEpoch + 1);
  }
}

TEST(PolicyDocumentTest, RejectsAuditTimesThatAreNoInstant) {
  EXPECT_THAT(
      json_errors(
          valid_with({{"created_at", "yesterday"}, {"updated_at", "2026-02-29T00:00:00Z"}})),
      ElementsAre(FieldErrorIs("created_at",
                               "time \"yesterday\": must be an ISO 8601 time such as "
                               "\"2026-11-24T09:15:02.123456Z\" (UTC) or "
                               "\"2026-11-24T10:15:02+01:00\""),
                  FieldErrorIs("updated_at", "time \"2026-02-29T00:00:00Z\": no such date")));
  for (const json& value : {json(true), json(1.5), json::array(), json::object()}) {
    SCOPED_TRACE(value.dump());
    EXPECT_THAT(json_errors(valid_with({{"updated_at", value}})),
                ElementsAre(FieldErrorIs("updated_at",
                                         "must be a time such as \"2026-11-24T09:15:02.123456Z\" "
                                         "or microseconds since the epoch")));
  }
}

TEST(PolicyDocumentTest, DescriptionWithSqlMetacharactersAndUnicodeSurvivesVerbatim) {
  const std::string description =
      "Robert'); DROP TABLE policies; -- \" ` \\ % _ /* */ \t 限流 ñ 🚦 \u200b";
  // JSON, built programmatically.
  const Policy from_json =
      policy_from_json(valid_with({{"description", description}})).policy.value();
  EXPECT_EQ(from_json.description, description);
  // JSON text, after export.
  EXPECT_EQ(parse_ok(policy_to_json(from_json).dump()).description, description);
  // YAML with a double-quoted scalar and escapes.
  const Policy from_yaml = parse_ok(
      "name: p\n"
      "apps: ['*']\n"
      "description: \"Robert'); DROP TABLE policies; -- \\\" ` \\\\ % _ /* */ \\t 限流 ñ 🚦 "
      "\\u200b\"\n"
      "limits: [{algorithm: fixed_window, limit: 1, window: 1s}]\n");
  EXPECT_EQ(from_yaml.description, description);
}

TEST(PolicyDocumentTest, QuotedYamlNumberStaysAString) {
  const Policy policy = parse_ok(R"(
name: "123"
description: '42'
apps: ["123", '007', "true"]
limits: [{algorithm: fixed_window, limit: 1, window: 1s}]
)");
  EXPECT_EQ(policy.name, "123");
  EXPECT_EQ(policy.description, "42");
  EXPECT_THAT(policy.apps, ElementsAre("123", "007", "true"));
}

TEST(PolicyDocumentTest, UnquotedYamlNumberIsNotAString) {
  EXPECT_THAT(errors_of(R"(
name: p
apps: [checkout, 123]
limits: [{algorithm: fixed_window, limit: 1, window: 1s}]
)"),
              ElementsAre(FieldErrorIs("apps[1]", "must be a string")));
}

TEST(PolicyDocumentTest, QuotedYamlIntegerIsNotAnInteger) {
  EXPECT_THAT(errors_of(R"(
name: p
apps: ["*"]
limits: [{algorithm: fixed_window, limit: "10", window: 1s}]
)"),
              ElementsAre(FieldErrorIs("limits[0].limit", "must be an integer")));
}

TEST(PolicyDocumentTest, JoinErrorsSeparatesWithSemicolonsAndOmitsEmptyField) {
  EXPECT_EQ(join_errors({}), "");
  EXPECT_EQ(join_errors({{.field = "limits[1].window", .message = "must be greater than 0"},
                         {.field = "name", .message = "must not be empty"}}),
            "limits[1].window: must be greater than 0; name: must not be empty");
  EXPECT_EQ(join_errors({{.field = "", .message = "not valid JSON"}}), "not valid JSON");
}

TEST(PolicyDocumentTest, YamlIntegersAreStrictlyDecimal) {
  for (const char* bad : {"010", "0x10", "1_000", "+5"}) {
    SCOPED_TRACE(bad);
    const ParsedPolicy parsed = policy_from_text(
        std::string("name: p\napps: [a]\nlimits:\n  - algorithm: fixed_window\n    limit: ") + bad +
        "\n    window: 1s\n");
    ASSERT_FALSE(parsed.policy.has_value());
    ASSERT_EQ(parsed.errors.size(), 1u);
    EXPECT_EQ(parsed.errors[0].field, "limits[0].limit");
    EXPECT_EQ(parsed.errors[0].message, "must be an integer");
  }
}

TEST(PolicyDocumentTest, YamlYesAndNoStayStrings) {
  const ParsedPolicy parsed = policy_from_text(
      "name: p\napps: [no, yes, on]\nlimits:\n  - {algorithm: fixed_window, limit: 1, window: "
      "1s}\n");
  ASSERT_TRUE(parsed.policy.has_value()) << join_errors(parsed.errors);
  EXPECT_THAT(parsed.policy->apps, ElementsAre("no", "yes", "on"));
}

TEST(PolicyDocumentTest, DescriptionIsBoundedNamingTheField) {
  EXPECT_TRUE(
      policy_from_json(valid_with({{"description", std::string(kMaxDescriptionBytes, 'd')}}))
          .policy.has_value());
  EXPECT_THAT(
      policy_from_json(valid_with({{"description", std::string(kMaxDescriptionBytes + 1, 'd')}}))
          .errors,
      ElementsAre(FieldErrorIs("description", HasSubstr("at most 4096 bytes"))));
}

TEST(PolicyDocumentTest, LimitsPerPolicyAreBoundedNamingTheField) {
  const json limit = {{"algorithm", "fixed_window"}, {"limit", 1}, {"window", "1s"}};
  json document = json::parse(kExampleJson);
  document["limits"] = json::array();
  for (std::size_t i = 0; i < kMaxLimitsPerPolicy; ++i) document["limits"].push_back(limit);
  EXPECT_TRUE(policy_from_json(document).policy.has_value());
  document["limits"].push_back(limit);
  EXPECT_THAT(policy_from_json(document).errors,
              ElementsAre(FieldErrorIs("limits", HasSubstr("at most 32 limits"))));
}

// Descriptions stored before the bound, or written by a tool, can be long: the YAML writer must
// not depend on their length (std::regex overflowed the stack at 100 000 characters).
TEST(PolicyDocumentTest, YamlOfAHundredThousandCharacterDescriptionRoundTrips) {
  for (const std::string& description :
       {std::string(100'000, '1'), "2024-01-01 " + std::string(100'000, 'x'),
        std::string(100'000, 'a'), "1" + std::string(100'000, '_') + "e"}) {
    json document = json::parse(kExampleJson);
    document["description"] = description;
    const std::string yaml = json_to_yaml(document);
    const ParsedPolicy parsed =
        policy_from_text(yaml, {.max_description_bytes = description.size()});
    ASSERT_TRUE(parsed.policy.has_value()) << join_errors(parsed.errors);
    EXPECT_EQ(parsed.policy->description, description);
  }
}

// The matcher that replaced the regular expression accepts exactly what the expression did:
// every string up to 4 characters over the characters that matter (but the words "no", "on",
// ... that are refused before the numbers), plus chosen longer ones.
TEST(PolicyDocumentTest, YamlMisreadingAgreesWithTheRegularExpressionItReplaced) {
  const std::regex number_like(
      "[-+]?(\\.[0-9_]+|[0-9][0-9_]*(\\.[0-9_]*)?)(e[-+]?[0-9]+)?"
      "|[-+]?0[xob][0-9a-f_]+"
      "|[-+]?\\.(inf|nan)"
      "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\\.[0-9_]*)?"
      "|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*");
  const std::string_view alphabet = "07_.:-+exoinfa";
  std::vector<std::string> texts = {"2024-1-1",   "2024-01-01t10:00",
                                    "1:75",       "1:59",
                                    "1:5:3.2",    "-1.5e3",
                                    "0x1f",       "0o17",
                                    "1_000",      ".inf",
                                    "-.nan",      "1s",
                                    "20240-1-1",  "2024-123-1",
                                    "1:0a",       "+.5",
                                    "2024-01-01", "0b",
                                    "1e",         "12:345"};
  std::vector<std::string> frontier = {""};
  for (int length = 1; length <= 4; ++length) {
    std::vector<std::string> next;
    for (const std::string& prefix : frontier) {
      for (const char c : alphabet) next.push_back(prefix + c);
    }
    texts.insert(texts.end(), next.begin(), next.end());
    frontier = std::move(next);
  }
  int disagreements = 0;
  for (const std::string& text : texts) {
    const bool word = text.empty() || text == "n" || text == "no" || text == "on" || text == "off";
    if (word) continue;  // refused as words, before the numbers are looked at
    const bool expected = std::regex_match(text, number_like);
    if (yaml_would_misread(text) != expected) {
      ADD_FAILURE() << "\"" << text << "\": expected " << expected;
      if (++disagreements > 10) break;
    }
  }
}

}  // namespace
}  // namespace sluice::policy

namespace sluice::policy {
namespace {

constexpr std::string_view kTwoPoliciesYaml = R"(
- name: a
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
- name: b
  apps: ["*"]
  limits: [{algorithm: gcra, rate: 5, period: 1s, burst: 2}]
)";

TEST(PoliciesFromText, ReadsAYamlList) {
  ParsedPolicies parsed = policies_from_text(kTwoPoliciesYaml);
  ASSERT_TRUE(parsed.errors.empty()) << join_errors(parsed.errors);
  ASSERT_EQ(parsed.policies.size(), 2u);
  EXPECT_EQ(parsed.policies[0].name, "a");
  EXPECT_EQ(parsed.policies[1].apps, std::vector<std::string>{"*"});
}

TEST(PoliciesFromText, ReadsYamlDocumentsSeparatedByDashes) {
  ParsedPolicies parsed = policies_from_text(R"(
name: a
apps: [checkout]
limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
---
name: b
apps: [checkout]
limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
)");
  ASSERT_TRUE(parsed.errors.empty()) << join_errors(parsed.errors);
  EXPECT_EQ(parsed.policies.size(), 2u);
}

TEST(PoliciesFromText, ReadsAJsonListAndASingleDocument) {
  ParsedPolicies list = policies_from_text(
      R"([{"name": "a", "apps": ["x"], "limits": [{"algorithm": "fixed_window",
           "limit": 1, "window": "1s"}]}])");
  ASSERT_TRUE(list.errors.empty()) << join_errors(list.errors);
  EXPECT_EQ(list.policies.size(), 1u);
  ParsedPolicies single = policies_from_text(
      R"({"name": "a", "apps": ["x"], "limits": [{"algorithm": "fixed_window",
          "limit": 1, "window": "1s"}]})");
  ASSERT_TRUE(single.errors.empty()) << join_errors(single.errors);
  EXPECT_EQ(single.policies.size(), 1u);
}

TEST(PoliciesFromText, ReportsEveryErrorOfEveryDocumentWithItsIndexAndKeepsNothing) {
  ParsedPolicies parsed = policies_from_text(R"(
- name: good
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
- name: bad one
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 0, window: 1s}]
- 42
- name: good
  apps: [checkout]
  limits: [{algorithm: fixed_window, limit: 10, window: 1s}]
)");
  EXPECT_TRUE(parsed.policies.empty());
  ASSERT_EQ(parsed.errors.size(), 4u) << join_errors(parsed.errors);
  EXPECT_EQ(parsed.errors[0].field, "[1].name");
  EXPECT_EQ(parsed.errors[1].field, "[1].limits[0].limit");
  EXPECT_EQ(parsed.errors[2].field, "[2]");
  EXPECT_EQ(parsed.errors[3],
            (FieldError{.field = "[3].name", .message = "duplicates the policy of document [0]"}));
}

TEST(PoliciesFromText, EmptyTextIsAnErrorAnEmptyListIsNot) {
  EXPECT_EQ(policies_from_text("").errors.size(), 1u);
  EXPECT_EQ(policies_from_text("# only a comment\n").errors.size(), 1u);
  ParsedPolicies empty = policies_from_text("[]");
  EXPECT_TRUE(empty.errors.empty());
  EXPECT_TRUE(empty.policies.empty());
}

TEST(PoliciesFromText, InvalidSyntaxIsOneError) {
  EXPECT_THAT(policies_from_text("[{").errors,
              ElementsAre(FieldError{.field = "", .message = "not valid JSON"}));
  ParsedPolicies yaml = policies_from_text("- name: [unclosed");
  ASSERT_EQ(yaml.errors.size(), 1u);
  EXPECT_THAT(yaml.errors[0].message, HasSubstr("not valid YAML"));
}

TEST(JsonToYaml, RoundTripsExportedPoliciesExactly) {
  ParsedPolicies parsed = policies_from_text(kTwoPoliciesYaml);
  ASSERT_TRUE(parsed.errors.empty());
  Policy tricky = parsed.policies[0];
  tricky.name = "c";
  tricky.description = "123";  // would read back as an integer if not quoted
  tricky.created_by = "true";
  tricky.updated_by = "";
  parsed.policies.push_back(tricky);
  json list = json::array();
  for (const Policy& policy : parsed.policies) list.push_back(policy_to_json(policy));
  const std::string yaml = json_to_yaml(list);
  ParsedPolicies again = policies_from_text(yaml);
  ASSERT_TRUE(again.errors.empty()) << join_errors(again.errors) << "\n" << yaml;
  json list_again = json::array();
  for (const Policy& policy : again.policies) list_again.push_back(policy_to_json(policy));
  EXPECT_EQ(list_again, list) << yaml;
}

TEST(JsonToYaml, QuotesOnlyStringsYamlWouldReadAsSomethingElse) {
  for (const std::string_view text :
       {"", "true", "No", "null", "~", "42", "-7", "1.5", ".5", "1e3", "0x1F", "0o17", "1_000",
        ".inf", "-.NaN", "1:30", "2024-01-02"}) {
    SCOPED_TRACE(text);
    const std::string yaml = json_to_yaml(json{{"description", text}});
    EXPECT_EQ(yaml, "description: \"" + std::string(text) + "\"\n");
  }
  for (const std::string_view text : {"1s", "250ms", "checkout", "orders.create", "v1.2"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(json_to_yaml(json{{"description", text}}),
              "description: " + std::string(text) + "\n");
  }
}

TEST(JsonToYaml, WritesTheNameFirst) {
  ParsedPolicies parsed = policies_from_text(kTwoPoliciesYaml);
  ASSERT_FALSE(parsed.policies.empty());
  const std::string yaml = json_to_yaml(policy_to_json(parsed.policies[0]));
  EXPECT_EQ(yaml.rfind("name: a\n", 0), 0u) << yaml;
  EXPECT_THAT(yaml, HasSubstr("- algorithm: fixed_window\n"));
}

}  // namespace
}  // namespace sluice::policy
