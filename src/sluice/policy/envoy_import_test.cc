#include "sluice/policy/envoy_import.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <variant>

namespace sluice::policy {
namespace {

using ::testing::HasSubstr;

// Finds the issue about `field`, or fails.
const FieldError* find_field(const std::vector<FieldError>& issues, std::string_view field) {
  for (const FieldError& issue : issues) {
    if (issue.field == field) return &issue;
  }
  ADD_FAILURE() << "no issue for " << field << "; have: " << join_errors(issues);
  return nullptr;
}

// The gRPC front end's descriptor index over imported policies.
DescriptorIndex index_of(const std::vector<Policy>& imported) {
  std::vector<std::shared_ptr<const Policy>> policies;
  for (const Policy& policy : imported) policies.push_back(std::make_shared<const Policy>(policy));
  return DescriptorIndex(policies);
}

algorithm::FixedWindow window_of(const Policy& policy) {
  EXPECT_EQ(policy.limits.size(), 1u);
  return std::get<algorithm::FixedWindow>(policy.limits.at(0));
}

TEST(EnvoyImport, DescriptorsWithValuesBecomeFixedWindowPoliciesOfTheDomainsApp) {
  const EnvoyImport result = import_envoy_config(R"(
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500
  - key: database
    value: default
    rate_limit:
      unit: MINUTE
      requests_per_unit: 6000
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  ASSERT_EQ(result.policies.size(), 2u);
  const Policy& users = result.policies[0];
  EXPECT_EQ(users.name, "mongo_cps.database_users");
  EXPECT_EQ(users.apps, std::vector<std::string>{"mongo_cps"});
  EXPECT_EQ(users.mode, Mode::kEnforce);
  EXPECT_EQ(users.on_store_failure, FailureMode::kFailOpen);
  EXPECT_EQ(window_of(users).limit, 500);
  EXPECT_EQ(window_of(users).window, kMicrosPerSecond);
  EXPECT_THAT(users.description, HasSubstr("domain mongo_cps, database=users"));
  EXPECT_EQ(result.policies[1].name, "mongo_cps.database_default");
  EXPECT_EQ(window_of(result.policies[1]).window, kMicrosPerMinute);
}

TEST(EnvoyImport, NestedDescriptorsMakeOnePolicyPerRateLimitNamedByTheirPath) {
  const EnvoyImport result = import_envoy_config(R"(
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        value: "+15550100"
        rate_limit: {unit: day, requests_per_unit: 5}
  - key: tier
    value: gold
    rate_limit: {unit: hour, requests_per_unit: 100}
    descriptors:
      - key: region
        value: eu
        rate_limit: {unit: hour, requests_per_unit: 10}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  ASSERT_EQ(result.policies.size(), 3u);
  EXPECT_EQ(result.policies[0].name, "messaging.message_type_marketing.to_number__15550100");
  EXPECT_EQ(window_of(result.policies[0]).window, kMicrosPerDay);
  EXPECT_EQ(result.policies[1].name, "messaging.tier_gold");
  EXPECT_EQ(result.policies[2].name, "messaging.tier_gold.region_eu");
  EXPECT_THAT(result.policies[2].description, HasSubstr("tier=gold, region=eu"));
}

TEST(EnvoyImport, EveryUnitMapsToItsWindow) {
  const struct {
    std::string_view unit;
    Micros window;
  } cases[] = {{"second", kMicrosPerSecond},  {"minute", kMicrosPerMinute},
               {"hour", kMicrosPerHour},      {"day", kMicrosPerDay},
               {"week", 7 * kMicrosPerDay},   {"month", 30 * kMicrosPerDay},
               {"year", 365 * kMicrosPerDay}, {"Second", kMicrosPerSecond}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.unit);
    const EnvoyImport result = import_envoy_config(
        "domain: d\ndescriptors:\n  - key: k\n    value: v\n    rate_limit: {unit: " +
        std::string(c.unit) + ", requests_per_unit: 7}\n");
    ASSERT_TRUE(result.errors.empty()) << join_errors(result.errors);
    ASSERT_EQ(result.policies.size(), 1u);
    EXPECT_EQ(window_of(result.policies[0]).window, c.window);
  }
}

TEST(EnvoyImport, MonthAndYearAreEnvoyRatelimitsDefaultDividersWithoutAWarning) {
  const EnvoyImport result = import_envoy_config(
      "domain: d\ndescriptors:\n  - {key: k, value: v, rate_limit: {unit: month, "
      "requests_per_unit: 1}}\n  - {key: k, value: w, rate_limit: {unit: year, "
      "requests_per_unit: 1}}\n");
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  ASSERT_EQ(result.policies.size(), 2u);
  EXPECT_EQ(window_of(result.policies[0]).window, 30 * kMicrosPerDay);
  EXPECT_EQ(window_of(result.policies[1]).window, 365 * kMicrosPerDay);
}

TEST(EnvoyImport, ShadowModeBecomesShadowPolicies) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: k
    value: v
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
)");
  ASSERT_EQ(result.policies.size(), 1u);
  EXPECT_EQ(result.policies[0].mode, Mode::kShadow);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
}

TEST(EnvoyImport, UnlimitedBecomesAnUnlimitedDescriptorPolicy) {
  const EnvoyImport result = import_envoy_config(R"(
domain: internal
descriptors:
  - key: service
    value: health
    rate_limit: {unlimited: true}
  - key: service
    value: api
    rate_limit: {unit: second, requests_per_unit: 9}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  ASSERT_EQ(result.policies.size(), 2u);
  const Policy& health = result.policies[0];
  EXPECT_EQ(health.name, "internal.service_health");
  EXPECT_TRUE(health.limits.empty());
  ASSERT_TRUE(health.descriptors);
  EXPECT_TRUE(health.descriptors->unlimited);
  EXPECT_EQ(result.policies[1].name, "internal.service_api");
  const ParsedPolicy again = policy_from_json(policy_to_json(health));
  EXPECT_TRUE(again.errors.empty()) << join_errors(again.errors);
}

TEST(EnvoyImport, ReplacesAndTheLimitsNameAreKeptAndDetailedMetricWarns) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: k
    value: v
    detailed_metric: true
    rate_limit:
      name: per_user
      unit: second
      requests_per_unit: 3
      replaces:
        - name: global
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  ASSERT_EQ(result.policies.size(), 1u);
  EXPECT_THAT(result.policies[0].description, HasSubstr("rate limit per_user"));
  EXPECT_NE(find_field(result.warnings, "descriptors[0].detailed_metric"), nullptr);
  EXPECT_EQ(result.warnings.size(), 1u) << join_errors(result.warnings);
  ASSERT_TRUE(result.policies[0].descriptors);
  EXPECT_TRUE(result.policies[0].descriptors->detailed_metric);
  EXPECT_EQ(result.policies[0].descriptors->limit_name, "per_user");
  EXPECT_EQ(result.policies[0].descriptors->replaces, std::vector<std::string>{"global"});
  EXPECT_EQ(result.policies[0].descriptors->answers, DescriptorAnswers::kEnvoy);
}

TEST(EnvoyImport, DeniedHitsAreCountedUnlessTheOptionsStopThem) {
  constexpr std::string_view kConfig = R"(
domain: d
descriptors:
  - {key: user, rate_limit: {unit: second, requests_per_unit: 5}}
  - {key: ip, value: 203.0.113.9, rate_limit: {unit: second, requests_per_unit: 0}}
)";
  for (const auto denied_cost : {algorithm::DeniedCost::kCounted, algorithm::DeniedCost::kFree}) {
    SCOPED_TRACE(static_cast<int>(denied_cost));
    const EnvoyImport result = import_envoy_config(kConfig, {.denied_cost = denied_cost});
    EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
    EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
    ASSERT_EQ(result.policies.size(), 2u);
    EXPECT_EQ(window_of(result.policies[0]).denied_cost, denied_cost);
    // requests_per_unit 0 denies every request either way; counted, it answers as envoy.
    EXPECT_EQ(window_of(result.policies[1]).limit, 0);
    EXPECT_EQ(window_of(result.policies[1]).denied_cost, algorithm::DeniedCost::kCounted);
    for (const Policy& policy : result.policies) {
      const ParsedPolicy again = policy_from_json(policy_to_json(policy));
      EXPECT_TRUE(again.errors.empty()) << join_errors(again.errors);
      ASSERT_TRUE(again.policy);
      EXPECT_EQ(window_of(*again.policy).denied_cost, window_of(policy).denied_cost);
      EXPECT_EQ(window_of(*again.policy).limit, window_of(policy).limit);
    }
  }
}

TEST(EnvoyImport, ShareThresholdSharesTheWildcardsCountAndNeedsATrailingStar) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: file
    value: reports/*
    share_threshold: true
    rate_limit: {unit: hour, requests_per_unit: 3}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  ASSERT_EQ(result.policies.size(), 1u);
  const DescriptorIndex index = index_of(result.policies);
  const auto a = index.match("d", {{"file", "reports/a.pdf"}});
  const auto b = index.match("d", {{"file", "reports/b.csv"}});
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->subject, "reports/*");
  EXPECT_EQ(a->subject, b->subject);
  for (const std::string_view value : {"reports", "/api/*/x", ""}) {
    SCOPED_TRACE(value);
    const EnvoyImport refused = import_envoy_config(
        "domain: d\ndescriptors:\n  - {key: file, value: \"" + std::string(value) +
        "\", share_threshold: true, rate_limit: {unit: hour, "
        "requests_per_unit: 3}}\n");
    const FieldError* error = find_field(refused.errors, "descriptors[0].share_threshold");
    ASSERT_NE(error, nullptr) << join_errors(refused.errors);
    EXPECT_THAT(error->message, HasSubstr("wildcard value ending with '*'"));
  }
}

TEST(EnvoyImport, QuotaModeValueToMetricAndMetadataImportWithWarningsNamingTheDifference) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: tenant
    quota_mode: true
    value_to_metric: true
    metadata: {tier: gold}
    rate_limit: {unit: day, requests_per_unit: 100}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  ASSERT_EQ(result.policies.size(), 1u);
  EXPECT_EQ(result.policies[0].mode, Mode::kShadow);
  EXPECT_THAT(find_field(result.warnings, "descriptors[0].quota_mode")->message,
              HasSubstr("dynamic_metadata"));
  EXPECT_NE(find_field(result.warnings, "descriptors[0].value_to_metric"), nullptr);
  EXPECT_NE(find_field(result.warnings, "descriptors[0].metadata"), nullptr);
  EXPECT_EQ(result.warnings.size(), 3u) << join_errors(result.warnings);
}

TEST(EnvoyImport, BadReplacesAndAUnitBesideUnlimitedAreRefusedAsEnvoyRatelimitDoes) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - {key: a, rate_limit: {name: mine, unit: second, requests_per_unit: 1, replaces: [{name: mine}]}}
  - {key: b, rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: ""}]}}
  - {key: c, rate_limit: {unit: second, requests_per_unit: 1, replaces: global}}
  - {key: e, rate_limit: {unlimited: true, unit: second}}
)");
  EXPECT_TRUE(result.policies.empty());
  EXPECT_NE(find_field(result.errors, "descriptors[0].rate_limit.replaces[0].name"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[1].rate_limit.replaces[0].name"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[2].rate_limit.replaces"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[3].rate_limit.unit"), nullptr);
  EXPECT_EQ(result.errors.size(), 4u) << join_errors(result.errors);
}

TEST(EnvoyImport, DefaultFalseFlagsAreNotWarnings) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: k
    value: v
    shadow_mode: false
    detailed_metric: false
    rate_limit: {unit: second, requests_per_unit: 3, unlimited: false, replaces: []}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  EXPECT_EQ(result.policies.size(), 1u);
}

TEST(EnvoyImport, ValueLessAndWildcardDescriptorsMatchAsInEnvoyRatelimit) {
  const EnvoyImport result = import_envoy_config(R"(
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
  - key: path
    value: /api/*
    rate_limit: {unit: second, requests_per_unit: 20}
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  ASSERT_EQ(result.policies.size(), 2u);
  EXPECT_EQ(result.policies[0].name, "edge_proxy_per_ip.remote_address");
  ASSERT_TRUE(result.policies[0].descriptors);
  EXPECT_EQ(result.policies[0].descriptors->entries,
            (std::vector<DescriptorEntry>{{"remote_address", std::nullopt}}));
  EXPECT_EQ(result.policies[1].name, "edge_proxy_per_ip.path__api__");
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  const DescriptorIndex index = index_of(result.policies);
  const auto api = index.match("edge_proxy_per_ip", {{"path", "/api/users"}});
  ASSERT_TRUE(api);
  EXPECT_EQ(api->policy->name, "edge_proxy_per_ip.path__api__");
  EXPECT_FALSE(index.match("edge_proxy_per_ip", {{"path", "/web"}}));
}

// envoyproxy/ratelimit's README examples, imported and then matched by the gRPC front end's
// index: each request descriptor reaches the policy envoyproxy/ratelimit would apply, or none.
TEST(EnvoyImport, ReadmeExamplesMatchAsEnvoyRatelimitDoes) {
  const EnvoyImport result = import_envoy_config(R"(
domain: messaging
descriptors:
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
---
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 5
---
domain: rl
descriptors:
  - key: category
    value: account
    descriptors:
      - key: user
        value: dummy
        rate_limit:
          unlimited: true
      - key: user
        rate_limit:
          unit: minute
          requests_per_unit: 20
)");
  ASSERT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << join_errors(result.warnings);
  const DescriptorIndex index = index_of(result.policies);
  struct Case {
    std::string domain;
    std::vector<RequestEntry> entries;
    std::string expected;  // policy name, or "none"
  };
  const std::vector<Case> cases = {
      {"messaging",
       {{"message_type", "marketing"}, {"to_number", "2061111111"}},
       "messaging.message_type_marketing.to_number"},
      {"messaging", {{"to_number", "2061111111"}}, "messaging.to_number"},
      {"messaging", {{"message_type", "marketing"}}, "none"},
      {"messaging", {{"message_type", "transactional"}, {"to_number", "1"}}, "none"},
      {"edge_proxy_per_ip", {{"remote_address", "10.0.0.1"}}, "edge_proxy_per_ip.remote_address"},
      {"edge_proxy_per_ip",
       {{"remote_address", "50.0.0.5"}},
       "edge_proxy_per_ip.remote_address_50.0.0.5"},
      {"rl", {{"category", "account"}, {"user", "dummy"}}, "rl.category_account.user_dummy"},
      {"rl", {{"category", "account"}, {"user", "alice"}}, "rl.category_account.user"},
      {"rl", {{"category", "other"}, {"user", "alice"}}, "none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    const std::optional<DescriptorMatch> match = index.match(c.domain, c.entries);
    EXPECT_EQ(match ? match->policy->name : "none", c.expected);
  }
  const auto dummy = index.match("rl", {{"category", "account"}, {"user", "dummy"}});
  ASSERT_TRUE(dummy);
  EXPECT_TRUE(dummy->policy->limits.empty());  // unlimited
  const auto per_user = index.match("rl", {{"category", "account"}, {"user", "alice"}});
  EXPECT_EQ(std::get<algorithm::FixedWindow>(per_user->policy->limits.at(0)).limit, 20);
  EXPECT_EQ(per_user->subject, "account|alice");
}

TEST(EnvoyImport, UnknownFieldsAreErrorsAsInEnvoyRatelimit) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
owner: team-a
descriptors:
  - key: k
    value: v
    rate_limit: {unit: second, requests_per_unit: 3, burst: 9, unit_multiplier: 2}
)");
  EXPECT_TRUE(result.policies.empty());
  EXPECT_NE(find_field(result.errors, "owner"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[0].rate_limit.burst"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[0].rate_limit.unit_multiplier"), nullptr);
  EXPECT_EQ(result.errors.size(), 3u) << join_errors(result.errors);
}

TEST(EnvoyImport, EmptyDescriptorsAreWarnings) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: k
    value: v
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: nothing
    value: here
  - key: quiet
    value: q
    shadow_mode: true
    descriptors: []
)");
  EXPECT_TRUE(result.errors.empty()) << join_errors(result.errors);
  EXPECT_EQ(result.policies.size(), 1u);
  const FieldError* empty = find_field(result.warnings, "descriptors[1]");
  ASSERT_NE(empty, nullptr);
  EXPECT_THAT(empty->message, HasSubstr("nothing to import"));
  EXPECT_NE(find_field(result.warnings, "descriptors[2].shadow_mode"), nullptr);
}

TEST(EnvoyImport, ReportsEveryErrorAtOnceAndReturnsNoPolicies) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: a
    value: ok
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: b
    value: v
    rate_limit: {unit: fortnight, requests_per_unit: 1}
  - key: c
    value: v
    rate_limit: {unit: second, requests_per_unit: -1}
  - key: d
    value: v
    rate_limit: {unit: second, requests_per_unit: ten}
  - key: e
    value: v
    rate_limit: {unit: second}
  - value: no-key
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: f
    value: v
    rate_limit: {unit: second, requests_per_unit: 4294967296}
  - just a string
  - key: g
    value: v
    rate_limit: [second, 1]
)");
  EXPECT_TRUE(result.policies.empty());
  EXPECT_THAT(find_field(result.errors, "descriptors[1].rate_limit.unit")->message,
              HasSubstr("got \"fortnight\""));
  EXPECT_THAT(find_field(result.errors, "descriptors[2].rate_limit.requests_per_unit")->message,
              HasSubstr("non-negative integer"));
  EXPECT_THAT(find_field(result.errors, "descriptors[3].rate_limit.requests_per_unit")->message,
              HasSubstr("non-negative integer"));
  EXPECT_EQ(find_field(result.errors, "descriptors[4].rate_limit.requests_per_unit")->message,
            "is required");
  EXPECT_EQ(find_field(result.errors, "descriptors[5].key")->message, "is required");
  EXPECT_THAT(find_field(result.errors, "descriptors[6].rate_limit.requests_per_unit")->message,
              HasSubstr("at most 4294967295"));
  EXPECT_NE(find_field(result.errors, "descriptors[7]"), nullptr);
  EXPECT_NE(find_field(result.errors, "descriptors[8].rate_limit"), nullptr);
  EXPECT_EQ(result.errors.size(), 8u) << join_errors(result.errors);
}

TEST(EnvoyImport, NamesThatCollideAfterSanitizingAreErrors) {
  const EnvoyImport result = import_envoy_config(R"(
domain: d
descriptors:
  - key: path
    value: a/b
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: path
    value: a b
    rate_limit: {unit: second, requests_per_unit: 2}
)");
  EXPECT_TRUE(result.policies.empty());
  const FieldError* collision = find_field(result.errors, "descriptors[1].rate_limit");
  ASSERT_NE(collision, nullptr);
  EXPECT_THAT(collision->message, HasSubstr("d.path_a_b, as descriptors[0].rate_limit"));
}

TEST(EnvoyImport, DomainIsRequiredAndSanitizedIntoTheApp) {
  EXPECT_EQ(find_field(import_envoy_config("descriptors: []\n").errors, "domain")->message,
            "is required");
  EXPECT_EQ(find_field(import_envoy_config("domain: ''\n").errors, "domain")->message,
            "must not be empty");
  const EnvoyImport result = import_envoy_config(
      "domain: my domain\ndescriptors:\n  - {key: k, value: v, rate_limit: {unit: second, "
      "requests_per_unit: 1}}\n");
  ASSERT_EQ(result.policies.size(), 1u);
  EXPECT_EQ(result.policies[0].apps, std::vector<std::string>{"my_domain"});
  EXPECT_EQ(result.policies[0].name, "my_domain.k_v");
}

TEST(EnvoyImport, OverlongNamesAreErrors) {
  const std::string value(130, 'x');
  const EnvoyImport result =
      import_envoy_config("domain: d\ndescriptors:\n  - {key: k, value: " + value +
                          ", rate_limit: {unit: second, requests_per_unit: 1}}\n");
  EXPECT_THAT(find_field(result.errors, "descriptors[0].rate_limit")->message,
              HasSubstr("longer than 128"));
}

TEST(EnvoyImport, SeveralDocumentsArePrefixedWithTheirIndex) {
  const EnvoyImport result = import_envoy_config(R"(
domain: a
descriptors:
  - {key: k, value: v, rate_limit: {unit: second, requests_per_unit: 1}}
---
domain: b
descriptors:
  - {key: k, value: v, rate_limit: {unit: eon, requests_per_unit: 1}}
)");
  EXPECT_NE(find_field(result.errors, "[1].descriptors[0].rate_limit.unit"), nullptr);
}

TEST(EnvoyImport, InvalidOrEmptyYamlIsOneError) {
  EXPECT_THAT(import_envoy_config("domain: [unclosed").errors.at(0).message,
              HasSubstr("not valid YAML"));
  EXPECT_EQ(import_envoy_config("").errors.size(), 1u);
  EXPECT_EQ(import_envoy_config("- a\n- b\n").errors.size(), 1u);
  const EnvoyImport latin1 = import_envoy_config(
      "domain: caf\xe9\ndescriptors:\n  - {key: k, rate_limit: {unit: second, requests_per_unit: "
      "1}}\n");
  EXPECT_TRUE(latin1.policies.empty());
  EXPECT_THAT(latin1.errors.at(0).message, HasSubstr("not UTF-8"));
}

TEST(EnvoyImport, AliasesThatNameDescriptorsBeyondAnyConfigurationAreOneError) {
  // Ten aliases per level, five levels: 10^5 descriptors and more from a few hundred bytes.
  std::string text =
      "x0: &d0 {key: k, value: v, rate_limit: {unit: second, requests_per_unit: 1}}\n";
  for (int level = 1; level <= 5; ++level) {
    const std::string previous = "*d" + std::to_string(level - 1);
    text +=
        "x" + std::to_string(level) + ": &d" + std::to_string(level) + " {key: k, descriptors: [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + previous;
    text += "]}\n";
  }
  text += "domain: bomb\ndescriptors: [*d5, *d5]\n";
  const EnvoyImport result = import_envoy_config(text);
  EXPECT_TRUE(result.policies.empty());
  const auto too_many =
      std::count_if(result.errors.begin(), result.errors.end(), [](const auto& e) {
        return e.message.find("descriptors once YAML aliases are expanded") != std::string::npos;
      });
  EXPECT_EQ(too_many, 1);
}

TEST(EnvoyImport, ImportedPoliciesAreValidDocuments) {
  const EnvoyImport result = import_envoy_config(R"(
domain: mongo_cps
descriptors:
  - key: database
    value: users
    shadow_mode: true
    rate_limit: {unit: year, requests_per_unit: 4294967295}
)");
  ASSERT_EQ(result.policies.size(), 1u);
  const ParsedPolicy again = policy_from_json(policy_to_json(result.policies[0]));
  EXPECT_TRUE(again.errors.empty()) << join_errors(again.errors);
}

}  // namespace
}  // namespace sluice::policy
