// The limiter's resolution of Envoy descriptors that envoyproxy/ratelimit's `replaces` and
// `unlimited` shape (docs/envoy.md): a replaced path is not limited nor counted in a call that
// also reaches its replacer, and an unlimited path answers with its policy and no store.
#include <gtest/gtest.h>

#include <vector>

#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::service {
namespace {

constexpr std::string_view kPolicies = R"(
name: reads
apps: [d]
descriptors: {entries: [{key: route, value: read}, {key: user}], name: reads}
limits: [{algorithm: fixed_window, limit: 2, window: 1s, denied_cost: counted}]
---
name: exports
apps: [d]
descriptors: {entries: [{key: route, value: export}, {key: user}], replaces: [reads]}
limits: [{algorithm: fixed_window, limit: 4, window: 1s, denied_cost: counted}]
---
name: internal
apps: [d]
descriptors: {entries: [{key: internal}], unlimited: true}
)";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

DecisionRequest descriptor(std::vector<policy::RequestEntry> entries) {
  return {.app = "d", .descriptor = DescriptorTarget{.entries = std::move(entries)}};
}

class LimiterDescriptorTest : public ::testing::Test {
 protected:
  std::vector<Decided> call(std::vector<DecisionRequest> requests) {
    std::vector<Decided> answers;
    limiter_.decide_all(
        std::move(requests), [&](std::vector<Decided> got) { answers = std::move(got); },
        Limiter::BatchRule::kResolutionAllOrNone);
    return answers;  // the memory store answers before decide_all returns
  }

  ManualClock clock_{1'700'000'000'000'000};
  store::MemoryStore memory_{clock_};
  StaticPolicyLookup lookup_{policies()};
  Limiter limiter_{memory_, &memory_, {.policies = &lookup_}};
};

TEST_F(LimiterDescriptorTest, AReplacedPathIsNeitherLimitedNorCountedBesideItsReplacer) {
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    const std::vector<Decided> both = call({descriptor({{"route", "read"}, {"user", "kim"}}),
                                            descriptor({{"route", "export"}, {"user", "kim"}})});
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0].policy, nullptr);  // replaced: answered as unmatched
    ASSERT_TRUE(both[0].decision.ok());
    EXPECT_TRUE(both[0].decision->verdict.allowed);
    ASSERT_NE(both[1].policy, nullptr);
    EXPECT_EQ(both[1].policy->name, "exports");
  }
  // Alone, `reads` applies, and the three calls above took nothing from it.
  const std::vector<Decided> alone = call({descriptor({{"route", "read"}, {"user", "kim"}})});
  ASSERT_NE(alone[0].policy, nullptr);
  EXPECT_EQ(alone[0].policy->name, "reads");
  EXPECT_EQ(alone[0].decision->verdict.remaining, 1);
}

TEST_F(LimiterDescriptorTest, AnUnlimitedPathAnswersAllowedWithItsPolicy) {
  const std::vector<Decided> answers = call({descriptor({{"internal", "x"}})});
  ASSERT_EQ(answers.size(), 1u);
  ASSERT_NE(answers[0].policy, nullptr);
  EXPECT_EQ(answers[0].policy->name, "internal");
  ASSERT_TRUE(answers[0].decision.ok());
  EXPECT_TRUE(answers[0].decision->verdict.allowed);
  // decide (one descriptor, no batch) answers the same.
  const Decided single = limiter_.block_on(descriptor({{"internal", "y"}}));
  ASSERT_NE(single.policy, nullptr);
  EXPECT_TRUE(single.decision->verdict.allowed);
  EXPECT_EQ(memory_.stats().keys, 0u);  // nothing was stored
}

}  // namespace
}  // namespace sluice::service
