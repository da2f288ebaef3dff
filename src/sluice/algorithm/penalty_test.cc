// Tests of the penalty box (penalty.h): the after-th denial within `within` blocks at once;
// strikes older than `within` are forgotten; a block denies whatever the budget and ends exactly
// at blocked_until (±1 µs); each further block escalates up to max; a quiet period forgets the
// escalation; peeks and allowed requests never strike; validation names its fields.
#include "sluice/algorithm/penalty.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace sluice::algorithm {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr Micros kSecond = kMicrosPerSecond;

const Penalty kPenalty{.after = 3,
                       .within = 10 * kSecond,
                       .block = 60 * kSecond,
                       .escalate = 2,
                       .max = 200 * kSecond,
                       .quiet = 600 * kSecond};

// A limit's denial: 5 s until the same request fits.
Verdict limit_denial() {
  return {.allowed = false,
          .limit = 10,
          .remaining = 0,
          .retry_after = 5 * kSecond,
          .reset_after = 7 * kSecond};
}

Verdict limit_allowance() {
  return {.allowed = true, .limit = 10, .remaining = 4, .reset_after = 6 * kSecond};
}

// Denies three times at `at`, `at` + 1 s, `at` + 2 s: the third starts a block.
Verdict strike_out(PenaltyState& state, Micros at) {
  Verdict verdict;
  for (int i = 0; i < 3; ++i) {
    verdict = limit_denial();
    EXPECT_TRUE(penalize(kPenalty, state, verdict, 1, at + i * kSecond));
  }
  return verdict;
}

TEST(PenaltyTest, TheAfterthDenialWithinTheWindowBlocksAtOnce) {
  PenaltyState state;
  Verdict first = limit_denial();
  EXPECT_TRUE(penalize(kPenalty, state, first, 1, kEpoch));
  EXPECT_EQ(first, limit_denial());  // a strike alone does not change the answer
  Verdict second = limit_denial();
  EXPECT_TRUE(penalize(kPenalty, state, second, 1, kEpoch + kSecond));
  Verdict third = limit_denial();
  EXPECT_TRUE(penalize(kPenalty, state, third, 1, kEpoch + 2 * kSecond));
  const Micros until = kEpoch + 62 * kSecond;
  EXPECT_EQ(third.blocked_until, until);
  EXPECT_EQ(third.retry_after, 60 * kSecond);
  EXPECT_EQ(third.reset_after, 60 * kSecond);
  EXPECT_EQ(third.remaining, 0);
  EXPECT_EQ(state.blocked_until, until);
  EXPECT_EQ(state.blocks, 1);
  EXPECT_TRUE(state.strikes.empty());
}

TEST(PenaltyTest, StrikesOlderThanTheWindowAreForgotten) {
  PenaltyState state;
  for (const Micros at : {kEpoch, kEpoch + kSecond, kEpoch + 10 * kSecond + 1}) {
    Verdict verdict = limit_denial();
    penalize(kPenalty, state, verdict, 1, at);
    EXPECT_FALSE(verdict.blocked_until) << at - kEpoch;
  }
  // At +10 s +1 µs the strike of +0 s is out of (now - 10 s, now]; the one of +1 s is not.
  EXPECT_EQ(state.strikes, (std::vector<Micros>{kEpoch + kSecond, kEpoch + 10 * kSecond + 1}));
  Verdict verdict = limit_denial();
  penalize(kPenalty, state, verdict, 1, kEpoch + 10 * kSecond);  // clock back 1 µs: 3 strikes
  EXPECT_TRUE(verdict.blocked_until);
}

TEST(PenaltyTest, ABlockDeniesWhateverTheBudgetUntilItsLastMicrosecond) {
  PenaltyState state;
  strike_out(state, kEpoch);
  const Micros until = kEpoch + 62 * kSecond;
  const PenaltyState blocked = state;

  Verdict during = limit_allowance();
  EXPECT_FALSE(penalize(kPenalty, state, during, 1, until - 1));
  EXPECT_FALSE(during.allowed);
  EXPECT_EQ(during.retry_after, 1);
  EXPECT_EQ(during.remaining, 0);
  EXPECT_EQ(during.blocked_until, until);
  EXPECT_EQ(state, blocked);  // denials during a block are not strikes

  Verdict peek = limit_allowance();
  EXPECT_FALSE(penalize(kPenalty, state, peek, 0, until - 1));
  EXPECT_FALSE(peek.allowed);

  // The limits' own wait wins when longer; a cost they can never grant stays never.
  Verdict longer = limit_denial();
  longer.retry_after = 2 * kSecond;
  penalize(kPenalty, state, longer, 1, until - kSecond);
  EXPECT_EQ(longer.retry_after, 2 * kSecond);
  Verdict never = limit_denial();
  never.retry_after.reset();
  penalize(kPenalty, state, never, 1, until - kSecond);
  EXPECT_FALSE(never.retry_after);

  Verdict after = limit_allowance();
  EXPECT_FALSE(penalize(kPenalty, state, after, 1, until));
  EXPECT_EQ(after, limit_allowance());
}

TEST(PenaltyTest, EachFurtherBlockEscalatesUpToMax) {
  PenaltyState state;
  Micros at = kEpoch;
  for (const Micros expected : {60 * kSecond, 120 * kSecond, 200 * kSecond, 200 * kSecond}) {
    const Verdict verdict = strike_out(state, at);
    SCOPED_TRACE(expected);
    const Micros struck = at + 2 * kSecond;
    EXPECT_EQ(verdict.blocked_until, struck + expected);
    at = struck + expected;  // strike out again as soon as the block ends
  }
}

TEST(PenaltyTest, AQuietPeriodAfterABlockForgetsTheEscalation) {
  PenaltyState state;
  strike_out(state, kEpoch);  // blocked until +62 s
  const Micros end = kEpoch + 62 * kSecond;
  // The next block's last strike 1 µs before the quiet period ends: escalated.
  PenaltyState remembered = state;
  EXPECT_EQ(strike_out(remembered, end + 600 * kSecond - 2 * kSecond - 1).blocked_until,
            end + 600 * kSecond - 1 + 120 * kSecond);
  // At the end of the quiet period: forgotten, the first block's length again.
  PenaltyState forgotten = state;
  EXPECT_EQ(strike_out(forgotten, end + 600 * kSecond - 2 * kSecond).blocked_until,
            end + 600 * kSecond + 60 * kSecond);
  EXPECT_EQ(forgotten.blocks, 1);
}

TEST(PenaltyTest, AllowedRequestsAndPeeksNeverStrike) {
  PenaltyState state;
  Verdict allowed = limit_allowance();
  EXPECT_FALSE(penalize(kPenalty, state, allowed, 1, kEpoch));
  Verdict peek = limit_denial();  // a cost-0 "denial" cannot happen, but must not strike
  EXPECT_FALSE(penalize(kPenalty, state, peek, 0, kEpoch));
  EXPECT_EQ(state, PenaltyState{});
}

TEST(PenaltyTest, StateExpiresWhenItsLastStrikeAndItsQuietPeriodHavePassed) {
  PenaltyState state;
  EXPECT_EQ(penalty_expires_at(kPenalty, state), 0);
  Verdict verdict = limit_denial();
  penalize(kPenalty, state, verdict, 1, kEpoch);
  EXPECT_EQ(penalty_expires_at(kPenalty, state), kEpoch + 10 * kSecond);
  strike_out(state, kEpoch + 20 * kSecond);  // +0 s forgotten; blocked at +22 s until +82 s
  EXPECT_EQ(state.blocked_until, kEpoch + 82 * kSecond);
  EXPECT_EQ(penalty_expires_at(kPenalty, state), kEpoch + 682 * kSecond);
}

TEST(PenaltyTest, ValidationNamesEachField) {
  EXPECT_TRUE(validate_penalty(kPenalty).empty());
  const std::vector<FieldError> errors = validate_penalty({.after = 0,
                                                           .within = 0,
                                                           .block = 40 * kMicrosPerDay,
                                                           .escalate = 11,
                                                           .max = kSecond,
                                                           .quiet = -1});
  std::vector<std::string> fields;
  for (const FieldError& error : errors) fields.push_back(error.field);
  EXPECT_EQ(fields, (std::vector<std::string>{"penalty.after", "penalty.within", "penalty.block",
                                              "penalty.quiet", "penalty.escalate", "penalty.max"}));
  EXPECT_EQ(block_duration(kPenalty, 64), 200 * kSecond);
  const Penalty flat{.after = 1, .within = 1, .block = 5, .escalate = 1, .max = 5, .quiet = 1};
  EXPECT_EQ(block_duration(flat, 64), 5);
}

}  // namespace
}  // namespace sluice::algorithm
