#include "sluice/policy/descriptors.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sluice/policy/document.h"
#include "sluice/policy/policy.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

std::shared_ptr<const Policy> descriptor_policy(std::string name, std::vector<std::string> apps,
                                                std::vector<DescriptorEntry> entries) {
  Policy policy{.name = std::move(name), .apps = std::move(apps)};
  policy.limits = {algorithm::FixedWindow{.limit = 1, .window = kMicrosPerSecond}};
  policy.descriptors = DescriptorSection{.entries = std::move(entries)};
  return std::make_shared<const Policy>(std::move(policy));
}

// The tree of envoyproxy/ratelimit's README example "messaging" plus a key-only sibling.
std::vector<std::shared_ptr<const Policy>> messaging_tree() {
  return {
      descriptor_policy("marketing", {"messaging"},
                        {{"message_type", "marketing"}, {"to_number", std::nullopt}}),
      descriptor_policy("any_to_number", {"messaging"}, {{"to_number", std::nullopt}}),
      descriptor_policy("exact_number", {"messaging"}, {{"to_number", "2061234567"}}),
      descriptor_policy("everyone_remote", {"*"}, {{"remote_address", std::nullopt}}),
  };
}

std::string matched(const DescriptorIndex& index, std::string_view domain,
                    const std::vector<RequestEntry>& entries) {
  const std::optional<DescriptorMatch> match = index.match(domain, entries);
  return match ? match->policy->name + " " + match->subject : "none";
}

TEST(DescriptorIndex, FollowsEnvoyRatelimitTreeSemantics) {
  const DescriptorIndex index(messaging_tree());
  struct Case {
    std::string name;
    std::string domain;
    std::vector<RequestEntry> entries;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"key-only leaf matches any value", "messaging", {{"to_number", "555"}}, "any_to_number 555"},
      {"value match is more specific than key-only",
       "messaging",
       {{"to_number", "2061234567"}},
       "exact_number 2061234567"},
      {"two levels, subject from every value",
       "messaging",
       {{"message_type", "marketing"}, {"to_number", "555"}},
       "marketing marketing|555"},
      {"shallower than the limit's depth is unmatched",
       "messaging",
       {{"message_type", "marketing"}},
       "none"},
      {"deeper than the tree is unmatched",
       "messaging",
       {{"to_number", "555"}, {"extra", "x"}},
       "none"},
      {"unknown value of a value-only node is unmatched",
       "messaging",
       {{"message_type", "transactional"}, {"to_number", "555"}},
       "none"},
      {"another domain's tree is not searched", "other", {{"to_number", "555"}}, "none"},
      {"the * tree serves every domain",
       "other",
       {{"remote_address", "10.0.0.1"}},
       "everyone_remote 10.0.0.1"},
      {"empty descriptor is unmatched", "messaging", {}, "none"},
      {"a NUL in a key matches nothing",
       "messaging",
       {{std::string_view("to_number\0x", 11), "555"}},
       "none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(matched(index, c.domain, c.entries), c.expected);
  }
}

TEST(DescriptorIndex, ValueMatchIsTakenWithoutBacktrackingAsEnvoyRatelimitDoes) {
  // a=x has children only under "b"; a (key-only) has "c". envoyproxy/ratelimit takes a=x and
  // then finds no "c" under it: unmatched, although the key-only branch would have matched.
  const DescriptorIndex index({descriptor_policy("value_branch", {"d"}, {{"a", "x"}, {"b", {}}}),
                               descriptor_policy("key_branch", {"d"}, {{"a", {}}, {"c", {}}})});
  EXPECT_EQ(matched(index, "d", {{"a", "x"}, {"c", "1"}}), "none");
  EXPECT_EQ(matched(index, "d", {{"a", "y"}, {"c", "1"}}), "key_branch y|1");
}

TEST(DescriptorIndex, WildcardValuesMatchByPrefixAfterExactValuesAndBeforeKeyOnly) {
  const DescriptorIndex index({descriptor_policy("api_any", {"d"}, {{"path", "/api/*"}}),
                               descriptor_policy("api_login", {"d"}, {{"path", "/api/login"}}),
                               descriptor_policy("any_path", {"d"}, {{"path", std::nullopt}})});
  EXPECT_EQ(matched(index, "d", {{"path", "/api/login"}}), "api_login /api/login");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/users"}}), "api_any /api/users");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/"}}), "api_any /api/");
  EXPECT_EQ(matched(index, "d", {{"path", "/web"}}), "any_path /web");
  EXPECT_EQ(matched(index, "d", {{"other", "/api/x"}}), "none");
}

TEST(DescriptorIndex, AStarInsideAValueStandsForAnyRunOfCharacters) {
  const DescriptorIndex index({descriptor_policy("action", {"d"}, {{"path", "/api/*/action"}}),
                               descriptor_policy("edit", {"d"}, {{"path", "/api/*/item/*/edit"}})});
  EXPECT_EQ(matched(index, "d", {{"path", "/api/123/action"}}), "action /api/123/action");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/a/b/action"}}), "action /api/a/b/action");
  EXPECT_EQ(matched(index, "d", {{"path", "/api//action"}}), "action /api//action");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/123/actions"}}), "none");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/7/item/9/edit"}}), "edit /api/7/item/9/edit");
  EXPECT_EQ(matched(index, "d", {{"path", "/api/7/item/9/view"}}), "none");
}

TEST(WildcardMatches, IsAnchoredAtBothEndsAndBacktracksToTheLastStar) {
  struct Case {
    std::string_view pattern, value;
    bool matches;
  };
  for (const Case& c : std::vector<Case>{{"a*", "a", true},
                                         {"a*", "abc", true},
                                         {"a*", "ba", false},
                                         {"*c", "abc", true},
                                         {"a*c", "ac", true},
                                         {"a*c", "abcbc", true},
                                         {"a*c", "abcb", false},
                                         {"a*b*c", "axxbyyc", true},
                                         {"a*b*c", "axxcyyb", false},
                                         {"*", "", true},
                                         {"**", "x", true},
                                         {"abc", "abc", true},
                                         {"abc", "abd", false}}) {
    SCOPED_TRACE(std::string(c.pattern) + " ~ " + std::string(c.value));
    EXPECT_EQ(wildcard_matches(c.pattern, c.value), c.matches);
  }
}

TEST(DescriptorIndex, ASharedWildcardCountsEveryValueUnderItsPattern) {
  Policy shared;
  shared.name = "shared";
  shared.apps = {"d"};
  shared.limits = {algorithm::FixedWindow{.limit = 1, .window = kMicrosPerSecond}};
  shared.descriptors = DescriptorSection{
      .entries = {{.key = "model", .value = "gpt-*", .shared = true}, {.key = "tenant"}}};
  const DescriptorIndex index({std::make_shared<const Policy>(shared)});
  EXPECT_EQ(matched(index, "d", {{"model", "gpt-4"}, {"tenant", "t1"}}), "shared gpt-*|t1");
  EXPECT_EQ(matched(index, "d", {{"model", "gpt-5"}, {"tenant", "t1"}}), "shared gpt-*|t1");
  EXPECT_EQ(matched(index, "d", {{"model", "gpt-5"}, {"tenant", "t2"}}), "shared gpt-*|t2");
}

TEST(DescriptorIndex, SubjectsAreInjectiveForOnePath) {
  EXPECT_EQ(descriptor_subject({{"k", "a|b"}, {"k2", "c"}}), "a\\|b|c");
  EXPECT_NE(descriptor_subject({{"k", "a|b"}, {"k2", "c"}}),
            descriptor_subject({{"k", "a"}, {"k2", "b|c"}}));
  EXPECT_NE(descriptor_subject({{"k", "a\\"}, {"k2", "|"}}),
            descriptor_subject({{"k", "a\\|"}, {"k2", ""}}));
}

TEST(DescriptorIndex, SamePathTwiceKeepsTheFirstNameAndReportsTheOther) {
  const DescriptorIndex index({descriptor_policy("zeta", {"d"}, {{"k", {}}}),
                               descriptor_policy("alpha", {"d"}, {{"k", {}}})});
  EXPECT_EQ(matched(index, "d", {{"k", "v"}}), "alpha v");
  ASSERT_EQ(index.conflicts().size(), 1u);
  EXPECT_NE(index.conflicts()[0].find("policy zeta"), std::string::npos);
}

TEST(DescriptorIndex, DisabledPoliciesAreNotIndexed) {
  Policy disabled = *descriptor_policy("off", {"d"}, {{"k", {}}});
  disabled.enabled = false;
  const DescriptorIndex index({std::make_shared<const Policy>(disabled)});
  EXPECT_EQ(matched(index, "d", {{"k", "v"}}), "none");
}

TEST(DescriptorSection, RoundTripsThroughThePolicyDocument) {
  const ParsedPolicy parsed = policy_from_text(R"(
name: envoy.messaging
apps: [messaging]
descriptors:
  entries:
    - {key: message_type, value: marketing}
    - {key: to_number}
    - {key: route, value: "/v1/*", shared: true}
  detailed_metric: true
  allow_override: true
  name: per_number
  replaces: [global, per_day]
  answers: envoy
limits:
  - {algorithm: sliding_window, limit: 5, window: 1d}
)");
  ASSERT_TRUE(parsed.policy) << join_errors(parsed.errors);
  ASSERT_TRUE(parsed.policy->descriptors);
  const DescriptorSection& section = *parsed.policy->descriptors;
  EXPECT_EQ(section.entries, (std::vector<DescriptorEntry>{{"message_type", "marketing"},
                                                           {"to_number", std::nullopt},
                                                           {"route", "/v1/*", true}}));
  EXPECT_EQ(section.limit_name, "per_number");
  EXPECT_EQ(section.replaces, (std::vector<std::string>{"global", "per_day"}));
  EXPECT_EQ(section.answers, DescriptorAnswers::kEnvoy);
  EXPECT_TRUE(section.detailed_metric);
  EXPECT_TRUE(section.allow_override);
  EXPECT_FALSE(section.unlimited);
  const ParsedPolicy again = policy_from_json(policy_to_json(*parsed.policy));
  ASSERT_TRUE(again.policy) << join_errors(again.errors);
  EXPECT_EQ(again.policy->descriptors, parsed.policy->descriptors);
  const ParsedPolicy yaml = policy_from_text(json_to_yaml(policy_to_json(*parsed.policy)));
  ASSERT_TRUE(yaml.policy) << join_errors(yaml.errors);
  EXPECT_EQ(yaml.policy->descriptors, parsed.policy->descriptors);
}

TEST(DescriptorSection, UnlimitedNeedsNoLimitsAndRefusesThem) {
  const ParsedPolicy unlimited = policy_from_text(R"(
name: internal
apps: [d]
descriptors: {entries: [{key: client, value: internal}], unlimited: true}
)");
  ASSERT_TRUE(unlimited.policy) << join_errors(unlimited.errors);
  EXPECT_TRUE(unlimited.policy->limits.empty());
  const ParsedPolicy both = policy_from_text(R"(
name: internal
apps: [d]
descriptors: {entries: [{key: client}], unlimited: true}
limits: [{algorithm: fixed_window, limit: 1, window: 1s}]
)");
  ASSERT_EQ(both.errors.size(), 1u);
  EXPECT_EQ(both.errors[0].field, "limits");
}

TEST(DescriptorSection, ChargeRoundTripsAndRefusesUnlimitedAndOverrides) {
  const ParsedPolicy charge = policy_from_text(R"(
name: llm.tokens
apps: [gateway]
max_debt: 1000
descriptors: {entries: [{key: tokens_used}], charge: true}
limits: [{algorithm: token_bucket, capacity: 10000, refill: 10000, period: 1d}]
)");
  ASSERT_TRUE(charge.policy) << join_errors(charge.errors);
  EXPECT_TRUE(charge.policy->descriptors->charge);
  const ParsedPolicy again = policy_from_json(policy_to_json(*charge.policy));
  ASSERT_TRUE(again.policy) << join_errors(again.errors);
  EXPECT_EQ(again.policy->descriptors, charge.policy->descriptors);
  for (const char* other : {"unlimited: true", "allow_override: true"}) {
    SCOPED_TRACE(other);
    const ParsedPolicy both = policy_from_text(std::string(R"(
name: llm.tokens
apps: [gateway]
descriptors: {entries: [{key: tokens_used}], charge: true, )") +
                                               other + "}\n");
    ASSERT_FALSE(both.policy);
    bool named = false;
    for (const FieldError& error : both.errors)
      named = named || error.field == "descriptors.charge";
    EXPECT_TRUE(named) << join_errors(both.errors);
  }
}

TEST(DescriptorSection, EveryProblemNamesItsField) {
  const ParsedPolicy parsed = policy_from_json(json::parse(R"({
    "name": "p", "apps": ["d"],
    "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1s"}],
    "descriptors": {"entries": [{"key": ""}, {"value": "v"}, {"key": "k", "value": 3, "x": 1},
                                {"key": "s", "value": "exact", "shared": true}],
                    "unlimited": "yes", "allow_override": 1, "shadow": true,
                    "name": "n", "replaces": ["n", ""], "answers": "grpc"}})"));
  std::vector<std::string> fields;
  for (const FieldError& error : parsed.errors) fields.push_back(error.field);
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(fields, (std::vector<std::string>{
                        "descriptors.allow_override", "descriptors.answers",
                        "descriptors.entries[0].key", "descriptors.entries[1].key",
                        "descriptors.entries[2].value", "descriptors.entries[2].x",
                        "descriptors.entries[3].shared", "descriptors.replaces[0]",
                        "descriptors.replaces[1]", "descriptors.shadow", "descriptors.unlimited"}));
  const ParsedPolicy empty = policy_from_json(json::parse(R"({
    "name": "p", "apps": ["d"],
    "limits": [{"algorithm": "fixed_window", "limit": 1, "window": "1s"}],
    "descriptors": {"entries": []}})"));
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0].field, "descriptors.entries");
}

}  // namespace
}  // namespace sluice::policy

namespace sluice::policy {
namespace {

TEST(DescriptorPathsOverlap, LevelByLevelByKeyAndValue) {
  using E = DescriptorEntry;
  const std::vector<E> any_path{{.key = "path"}};
  const std::vector<E> api{{.key = "path", .value = "/api/*"}};
  const std::vector<E> orders{{.key = "path", .value = "/api/orders"}};
  const std::vector<E> internal{{.key = "path", .value = "/internal"}};
  const std::vector<E> two{{.key = "path"}, {.key = "user"}};
  struct Case {
    const std::vector<E>& a;
    const std::vector<E>& b;
    bool overlap;
  };
  for (const Case& c :
       {Case{any_path, orders, true}, Case{api, orders, true}, Case{api, internal, false},
        Case{orders, internal, false}, Case{api, api, true}, Case{any_path, two, false},
        Case{api, std::vector<E>{{.key = "host", .value = "/api/x"}}, false},
        Case{api, std::vector<E>{{.key = "path", .value = "/a*"}}, true}}) {
    SCOPED_TRACE(testing::Message() << c.a.size() << " vs " << c.b.size());
    EXPECT_EQ(descriptor_paths_overlap(c.a, c.b), c.overlap);
    EXPECT_EQ(descriptor_paths_overlap(c.b, c.a), c.overlap);
  }
}

}  // namespace
}  // namespace sluice::policy
