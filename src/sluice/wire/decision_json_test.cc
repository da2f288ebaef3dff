#include "sluice/wire/decision_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <vector>

namespace sluice::wire {
namespace {

using nlohmann::json;
using service::millis_rounded_up;

std::vector<Decision> decisions() {
  std::vector<Decision> cases;
  cases.push_back({.policy = "demo.api"});
  Decision full{.limit_index = 2,
                .lease = "0123456789abcdef0123456789abcdef",
                .policy = "orders.create-v2_x",
                .mode = Mode::kShadow,
                .degraded = true,
                .shadow_denied = true};
  full.verdict = {.allowed = true,
                  .limit = 100,
                  .remaining = -1,
                  .retry_after = 1'001,
                  .reset_after = 3'600'000'000,
                  .delay = 1};
  cases.push_back(full);
  Decision odd{.lease = "we\"ird\\\n\xc3\xa9", .policy = ""};
  odd.verdict = {.allowed = false, .limit = 5, .remaining = 0, .retry_after = 0};
  cases.push_back(odd);
  Decision charged{.policy = "llm.tokens"};  // a quota operation's decision carries its balance
  charged.verdict = {.allowed = true, .limit = 1'000, .remaining = 0, .balance = -250};
  cases.push_back(charged);
  Decision reserved{.reservation = "0123456789abcdef0123456789abcdef", .policy = "llm.tokens"};
  reserved.verdict = {.allowed = true, .limit = 1'000, .remaining = 750, .balance = 750};
  cases.push_back(reserved);
  Decision blocked{.policy = "api.login"};  // the penalty box: when the block ends (Unix µs)
  blocked.verdict = {.allowed = false,
                     .limit = 5,
                     .remaining = 0,
                     .retry_after = 300'000'000,
                     .reset_after = 300'000'000,
                     .blocked_until = 1'700'000'300'000'000};
  cases.push_back(blocked);
  return cases;
}

// The hand-written writer must produce what a JSON library would: same keys, values, escapes.
TEST(DecisionJsonTest, WritesTheDocumentedObject) {
  for (const Decision& d : decisions()) {
    SCOPED_TRACE(d.policy);
    const std::string text = decision_json(d);
    const json parsed = json::parse(text);
    json expected = {
        {"allowed", d.verdict.allowed},
        {"limit", d.verdict.limit},
        {"remaining", d.verdict.remaining},
        {"retry_after_ms",
         d.verdict.retry_after ? json(millis_rounded_up(*d.verdict.retry_after)) : json(nullptr)},
        {"reset_after_ms", millis_rounded_up(d.verdict.reset_after)},
        {"delay_ms", d.verdict.delay ? json(millis_rounded_up(*d.verdict.delay)) : json(nullptr)},
        {"lease", d.lease ? json(*d.lease) : json(nullptr)},
        {"policy", d.policy},
        {"limit_index", d.limit_index},
        {"mode", d.mode == Mode::kShadow ? "shadow" : "enforce"},
        {"degraded", d.degraded},
        {"shadow_denied", d.shadow_denied}};
    if (d.verdict.balance) expected["balance"] = *d.verdict.balance;
    if (d.reservation) expected["reservation"] = *d.reservation;
    if (d.verdict.blocked_until) {
      expected["blocked_until"] = millis_rounded_up(*d.verdict.blocked_until);
    }
    EXPECT_EQ(parsed, expected);
    EXPECT_EQ(text, expected.dump()) << "keys in sorted order, compact";
  }
}

// What the server writes, a client reads back: durations to the millisecond, rounded up.
TEST(DecisionJsonTest, ReadsBackWhatItWrites) {
  for (const Decision& d : decisions()) {
    SCOPED_TRACE(d.policy);
    StatusOr<Decision> read = decision_from_json(json::parse(decision_json(d)));
    ASSERT_TRUE(read.ok()) << read.status().to_string();
    Decision expected = d;
    const auto whole_millis = [](Micros us) { return millis_rounded_up(us) * kMicrosPerMilli; };
    if (expected.verdict.retry_after) {
      expected.verdict.retry_after = whole_millis(*expected.verdict.retry_after);
    }
    if (expected.verdict.delay) expected.verdict.delay = whole_millis(*expected.verdict.delay);
    if (expected.verdict.blocked_until) {
      expected.verdict.blocked_until = whole_millis(*expected.verdict.blocked_until);
    }
    expected.verdict.reset_after = whole_millis(expected.verdict.reset_after);
    EXPECT_EQ(read->verdict, expected.verdict);
    EXPECT_EQ(read->limit_index, expected.limit_index);
    EXPECT_EQ(read->lease, expected.lease);
    EXPECT_EQ(read->reservation, expected.reservation);
    EXPECT_EQ(read->policy, expected.policy);
    EXPECT_EQ(read->mode, expected.mode);
    EXPECT_EQ(read->degraded, expected.degraded);
    EXPECT_EQ(read->shadow_denied, expected.shadow_denied);
  }
}

TEST(DecisionJsonTest, ReadingNamesTheFieldThatIsWrong) {
  EXPECT_NE(decision_from_json(json::array()).status().message().find("decision"),
            std::string::npos);
  json missing = json::parse(decision_json({.policy = "p"}));
  missing.erase("remaining");
  EXPECT_NE(decision_from_json(missing).status().message().find("decision.remaining"),
            std::string::npos);
  json wrong = json::parse(decision_json({.policy = "p"}));
  wrong["allowed"] = "yes";
  EXPECT_NE(decision_from_json(wrong).status().message().find("decision.allowed"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::wire

namespace sluice::wire {
namespace {

TEST(DecisionJsonTest, BlockedUntilIsUnixMillisAndOnlyInBlockedDecisions) {
  Decision blocked{.policy = "api.login"};
  blocked.verdict = {.allowed = false, .limit = 5, .retry_after = 1, .blocked_until = 1'500'001};
  EXPECT_EQ(json::parse(decision_json(blocked))["blocked_until"], 1'501);  // rounded up
  blocked.verdict.blocked_until.reset();
  EXPECT_FALSE(json::parse(decision_json(blocked)).contains("blocked_until"));
}

}  // namespace
}  // namespace sluice::wire
