// The asynchronous pipeline of Limiter::decide: lookup by name, deadlines on store calls that
// leave the process, server-side waits, batches. Time is injected: one ManualClock drives the
// memory store and the timer queue, whose timers fire only when the test calls fire_due().
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/limiter.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::service {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;

constexpr std::string_view kPolicies = R"([
  {"name": "open", "apps": ["web"], "on_store_failure": "fail_open", "limits": [
     {"algorithm": "fixed_window", "limit": 4, "window": "1h"}]},
  {"name": "closed", "apps": ["web"], "on_store_failure": "fail_closed", "limits": [
     {"algorithm": "fixed_window", "limit": 4, "window": "1h"}]},
  {"name": "paced", "apps": ["*"], "limits": [
     {"algorithm": "token_bucket", "capacity": 1, "refill": 1, "period": "200ms"}]},
  {"name": "metered", "apps": ["web"], "max_debt": 5, "limits": [
     {"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "metered-shadow", "apps": ["web"], "mode": "shadow", "max_debt": 5, "limits": [
     {"algorithm": "fixed_window", "limit": 10, "window": "1h"}]},
  {"name": "leased", "apps": ["web"], "limits": [
     {"algorithm": "concurrency", "limit": 2, "lease_ttl": "1s"}]},
  {"name": "boxed", "apps": ["web"], "limits": [
     {"algorithm": "token_bucket", "capacity": 1, "refill": 1, "period": "1s"}],
   "penalty": {"after": 2, "within": "10s", "block": "1m", "max": "4m"}}
])";

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(kPolicies);
  EXPECT_TRUE(parsed.errors.empty()) << policy::join_errors(parsed.errors);
  return parsed.policies;
}

// A store whose calls leave the process and are answered only when the test says so.
class SilentStore final : public store::DecisionPort {
 public:
  void acquire(const store::SubjectRef&, std::int64_t, Done done) override {
    held.push_back(std::move(done));
  }
  void apply_quota(const store::SubjectRef&, const store::QuotaRequest&, Done done) override {
    held.push_back(std::move(done));
  }
  void lease(const store::SubjectRef&, store::LeaseOperation, std::string_view,
             LeaseDone done) override {
    done(false);
  }
  bool answers_in_process() const override { return false; }

  std::vector<Done> held;
};

// Collects the answers a callback receives.
struct Answers {
  std::vector<StatusOr<Decision>> received;
  Limiter::Done callback() {
    return [this](Decided decided) { received.push_back(std::move(decided.decision)); };
  }
};

// The decisions of a batch's answers.
std::vector<StatusOr<Decision>> decisions_of(std::vector<Decided> answers) {
  std::vector<StatusOr<Decision>> decisions;
  for (Decided& answer : answers) decisions.push_back(std::move(answer.decision));
  return decisions;
}

class LimiterPipelineTest : public testing::Test {
 protected:
  ManualClock clock_{kEpoch};
  TimerQueue timers_{clock_, kMicrosPerMilli, TimerQueue::Threading::kManual};
  StaticPolicyLookup lookup_{policies()};
  store::MemoryStore memory_{clock_};
};

TEST_F(LimiterPipelineTest, FindsThePolicyByNameAndRefusesUnknownOnesAndUnlistedApps) {
  Limiter limiter(memory_, &memory_, {.policies = &lookup_, .timers = &timers_});
  Answers answers;
  limiter.decide({.app = "web", .policy = "open", .subject = "a"}, answers.callback());
  limiter.decide({.app = "mobile", .policy = "open", .subject = "a"}, answers.callback());
  limiter.decide({.app = "web", .policy = "nope", .subject = "a"}, answers.callback());
  limiter.decide({.app = "web", .policy = "open", .subject = "a", .cost = -1}, answers.callback());
  ASSERT_EQ(answers.received.size(), 4u);  // all before acquire returned: the store is in process
  ASSERT_TRUE(answers.received[0].ok());
  EXPECT_TRUE(answers.received[0]->verdict.allowed);
  EXPECT_EQ(answers.received[0]->policy, "open");
  EXPECT_EQ(answers.received[1].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(answers.received[2].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(answers.received[3].status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(limiter.stats().allowed, 1u);
}

TEST_F(LimiterPipelineTest, ChargesIntoDebtBoundedByThePolicysMaxDebtAndRefunds) {
  Limiter limiter(memory_, &memory_, {.policies = &lookup_, .timers = &timers_});
  Answers answers;
  const auto call = [](std::string policy, store::QuotaOperation operation, std::int64_t cost) {
    return DecisionRequest{.app = "web",
                           .policy = std::move(policy),
                           .operation = operation_of(operation),
                           .subject = "tenant",
                           .cost = cost};
  };
  using store::QuotaOperation;
  limiter.decide(call("metered", QuotaOperation::kCharge, 12), answers.callback());
  limiter.decide(call("metered", QuotaOperation::kCharge, 4), answers.callback());
  limiter.decide(call("metered", QuotaOperation::kRefund, 3), answers.callback());
  limiter.decide({.app = "web", .policy = "metered", .subject = "tenant"}, answers.callback());
  ASSERT_EQ(answers.received.size(), 4u);
  for (const auto& answer : answers.received)
    ASSERT_TRUE(answer.ok()) << answer.status().to_string();
  EXPECT_TRUE(answers.received[0]->verdict.allowed);
  EXPECT_EQ(answers.received[0]->verdict.balance, -2);
  EXPECT_EQ(answers.received[0]->policy, "metered");
  EXPECT_FALSE(answers.received[1]->verdict.allowed) << "-6 is below max_debt 5";
  EXPECT_EQ(answers.received[1]->verdict.balance, -2);
  EXPECT_EQ(answers.received[2]->verdict.balance, 1);
  EXPECT_TRUE(answers.received[3]->verdict.allowed) << "the refund made room for one";
  EXPECT_EQ(answers.received[3]->verdict.balance, std::nullopt);

  answers.received.clear();
  limiter.decide(call("metered-shadow", QuotaOperation::kCharge, 16), answers.callback());
  limiter.decide(call("leased", QuotaOperation::kCharge, 1), answers.callback());
  limiter.decide(
      {.app = "mobile", .policy = "metered", .operation = Operation::kCharge, .subject = "tenant"},
      answers.callback());
  limiter.decide(call("metered", QuotaOperation::kRefund, -1), answers.callback());
  ASSERT_EQ(answers.received.size(), 4u);
  ASSERT_TRUE(answers.received[0].ok());
  EXPECT_TRUE(answers.received[0]->verdict.allowed);
  EXPECT_TRUE(answers.received[0]->shadow_denied) << "shadow mode reports, charges nothing";
  EXPECT_EQ(answers.received[0]->verdict.balance, 10);
  EXPECT_EQ(answers.received[1].status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(answers.received[2].status().code(), StatusCode::kNotFound);
  EXPECT_EQ(answers.received[3].status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LimiterPipelineTest, AQuotaOperationTheStoreNeverAnswersIsAnErrorAtTheDeadline) {
  SilentStore silent;
  Limiter limiter(
      silent, &memory_,
      {.store_timeout = 50 * kMicrosPerMilli, .policies = &lookup_, .timers = &timers_});
  Answers answers;
  limiter.decide({.app = "web",
                  .policy = "metered",
                  .operation = Operation::kCharge,
                  .subject = "a",
                  .cost = 3},
                 answers.callback());
  ASSERT_EQ(silent.held.size(), 1u);
  clock_.advance(50 * kMicrosPerMilli - 1);
  timers_.fire_due();
  EXPECT_TRUE(answers.received.empty()) << "answered before its deadline";
  clock_.advance(1);
  timers_.fire_due();
  ASSERT_EQ(answers.received.size(), 1u);
  EXPECT_EQ(answers.received[0].status().code(), StatusCode::kDeadlineExceeded)
      << "not degraded: a failure mode cannot know the balance";
  silent.held[0](Decision{});
  EXPECT_EQ(answers.received.size(), 1u);
  EXPECT_EQ(limiter.stats().store_errors, 1u);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(LimiterPipelineTest, StoreThatNeverAnswersIsDecidedByTheFailureModeAtTheDeadline) {
  SilentStore silent;
  Limiter limiter(
      silent, &memory_,
      {.store_timeout = 50 * kMicrosPerMilli, .policies = &lookup_, .timers = &timers_});
  struct Case {
    std::string policy;
    bool allowed;
  };
  for (const Case& c : {Case{"open", true}, Case{"closed", false}}) {
    SCOPED_TRACE(c.policy);
    Answers answers;
    silent.held.clear();
    limiter.decide({.app = "web", .policy = c.policy, .subject = "a"}, answers.callback());
    ASSERT_EQ(silent.held.size(), 1u);
    clock_.advance(50 * kMicrosPerMilli - 1);
    timers_.fire_due();
    EXPECT_TRUE(answers.received.empty()) << "answered before its deadline";
    clock_.advance(1);
    timers_.fire_due();
    ASSERT_EQ(answers.received.size(), 1u);
    ASSERT_TRUE(answers.received[0].ok());
    EXPECT_TRUE(answers.received[0]->degraded);
    EXPECT_EQ(answers.received[0]->verdict.allowed, c.allowed);
    // The store's late answer changes nothing: the caller was answered once.
    silent.held[0](Decision{});
    EXPECT_EQ(answers.received.size(), 1u);
  }
  EXPECT_EQ(limiter.stats().degraded, 2u);
  EXPECT_EQ(limiter.stats().store_errors, 2u);
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(LimiterPipelineTest, BeyondMaxPendingRequestsAreRefusedAtOnceAndPlacesComeBack) {
  SilentStore silent;
  Limiter limiter(silent, &memory_, {.policies = &lookup_, .timers = &timers_, .max_pending = 2});
  Answers held;
  limiter.decide({.app = "web", .policy = "open", .subject = "a"}, held.callback());
  limiter.decide({.app = "web", .policy = "open", .subject = "b"}, held.callback());
  EXPECT_EQ(limiter.stats().pending, 2u);
  Answers refused;
  limiter.decide({.app = "web", .policy = "open", .subject = "c"}, refused.callback());
  ASSERT_EQ(refused.received.size(), 1u);  // at once, without asking the store
  EXPECT_TRUE(is_overloaded(refused.received[0].status()));
  EXPECT_EQ(refused.received[0].status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(silent.held.size(), 2u);
  // A batch that does not fit whole is refused whole; so is a held-policy call.
  std::optional<std::vector<StatusOr<Decision>>> batch;
  limiter.decide_all(
      {{.app = "web", .policy = "open", .subject = "d"}},
      [&batch](std::vector<Decided> answers) { batch = decisions_of(std::move(answers)); });
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 1u);
  EXPECT_TRUE(is_overloaded(batch->front().status()));
  limiter.decide({.app = "web", .held = lookup_.find("open"), .subject = "e"}, refused.callback());
  ASSERT_EQ(refused.received.size(), 2u);
  EXPECT_TRUE(is_overloaded(refused.received[1].status()));
  EXPECT_EQ(limiter.stats().overloaded, 3u);
  EXPECT_EQ(silent.held.size(), 2u);

  // An answer gives its place back; so do requests refused for their own reasons.
  silent.held[0](Decision{.verdict = {.allowed = true, .limit = 4}});
  EXPECT_EQ(held.received.size(), 1u);
  EXPECT_EQ(limiter.stats().pending, 1u);
  limiter.decide({.app = "web", .policy = "nope", .subject = "x"}, refused.callback());
  EXPECT_EQ(refused.received.back().status().code(), StatusCode::kNotFound);
  EXPECT_EQ(limiter.stats().pending, 1u);
  limiter.decide({.app = "web", .policy = "open", .subject = "f"}, held.callback());
  EXPECT_EQ(silent.held.size(), 3u);
  EXPECT_EQ(limiter.stats().pending, 2u);
  // A deadline answers too, and frees the place.
  clock_.advance(kMicrosPerSecond);
  timers_.fire_due();
  EXPECT_EQ(held.received.size(), 3u);
  EXPECT_EQ(limiter.stats().pending, 0u);
  EXPECT_EQ(limiter.stats().overloaded, 3u);
  std::string text;
  limiter.metrics().write(text);
  EXPECT_NE(text.find("sluice_decisions_overloaded_total 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_decisions_pending 0\n"), std::string::npos) << text;
}

// Issue 32 M6: one client parking waits took every place of max_pending. The places are shared
// out (pending_bound.h): per client, and for decisions asked with a wait, in total, per client
// and per policy. A refusal names its bound, takes nothing, and places come back on answers.
TEST_F(LimiterPipelineTest, OneClientOrOnePolicyHoldsAtMostItsShareOfThePendingPlaces) {
  SilentStore silent;
  Limiter limiter(silent, &memory_,
                  {.policies = &lookup_,
                   .timers = &timers_,
                   .max_pending = 16,
                   .max_pending_per_client = 4,
                   .max_waiting = 4,
                   .max_waiting_per_client = 2,
                   .max_waiting_per_policy = 3});
  Answers held;
  Answers refused;
  const auto ask = [&](std::string client, std::string policy, Micros wait, Answers& into) {
    limiter.decide({.app = "web",
                    .policy = std::move(policy),
                    .subject = "s" + std::to_string(silent.held.size()),
                    .wait = wait,
                    .client = std::move(client)},
                   into.callback());
  };
  const auto refused_by = [&](std::string_view setting) {
    if (refused.received.empty() || refused.received.back().ok()) return false;
    const Status& status = refused.received.back().status();
    return is_overloaded(status) && status.message().find(setting) != std::string::npos;
  };
  for (int i = 0; i < 4; ++i) ask("a", "open", 0, held);
  ask("a", "open", 0, refused);
  EXPECT_TRUE(refused_by("(max_pending_per_client)"));
  ask("b", "open", 0, held);  // another client: decided
  EXPECT_EQ(silent.held.size(), 5u);

  const Micros wait = kMicrosPerSecond;
  ask("c", "open", wait, held);
  ask("c", "open", wait, held);
  ask("c", "open", wait, refused);
  EXPECT_TRUE(refused_by("(max_waiting_per_client)"));
  ask("c", "open", 0, held);  // without a wait it still has places
  ask("d", "open", wait, held);
  ask("d", "open", wait, refused);
  EXPECT_TRUE(refused_by("(max_waiting_per_policy)"));
  ask("d", "closed", wait, held);
  ask("e", "paced", wait, refused);
  EXPECT_TRUE(refused_by("(max_waiting_decisions)"));
  ask("e", "paced", 0, held);
  EXPECT_EQ(silent.held.size(), 11u);
  EXPECT_EQ(refused.received.size(), 4u);
  EXPECT_EQ(limiter.stats().pending, 11u);
  EXPECT_EQ(limiter.stats().overloaded, 4u);

  // A batch that does not fit its client's share is refused whole and holds nothing.
  std::optional<std::vector<StatusOr<Decision>>> batch;
  std::vector<DecisionRequest> five(
      5, {.app = "web", .policy = "open", .subject = "f", .client = "f"});
  limiter.decide_all(
      five, [&batch](std::vector<Decided> answers) { batch = decisions_of(std::move(answers)); });
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 5u);
  EXPECT_TRUE(is_overloaded(batch->back().status()));
  EXPECT_EQ(limiter.stats().pending, 11u);
  EXPECT_EQ(limiter.stats().overloaded, 9u);

  // Answers give every place back: the same client and policy fit again.
  for (auto& answer : silent.held) answer(Decision{.verdict = {.allowed = true, .limit = 4}});
  EXPECT_EQ(held.received.size(), 11u);
  EXPECT_EQ(limiter.stats().pending, 0u);
  const std::size_t before = silent.held.size();
  ask("c", "open", wait, held);
  ask("c", "open", wait, held);
  for (int i = 0; i < 2; ++i) ask("a", "open", 0, held);
  EXPECT_EQ(silent.held.size(), before + 4);
  for (std::size_t i = before; i < silent.held.size(); ++i) {
    silent.held[i](Decision{.verdict = {.allowed = true, .limit = 4}});
  }
  EXPECT_EQ(limiter.stats().pending, 0u);
}

TEST(PendingBoundsTest, ServeSharesAreHalfOfTheBoundTheyDivide) {
  const PendingBounds shares = with_default_shares({.total = 10'000});
  EXPECT_EQ(shares.per_client, 5'000u);
  EXPECT_EQ(shares.waiting, 5'000u);
  EXPECT_EQ(shares.waiting_per_client, 2'500u);
  EXPECT_EQ(shares.waiting_per_policy, 2'500u);
  const PendingBounds chosen =
      with_default_shares({.total = 100, .per_client = 100, .waiting_per_policy = 7});
  EXPECT_EQ(chosen.per_client, 100u);
  EXPECT_EQ(chosen.waiting, 50u);
  EXPECT_EQ(chosen.waiting_per_policy, 7u);
  const PendingBounds unbounded = with_default_shares({});
  EXPECT_EQ(unbounded.per_client, 0u);
  EXPECT_EQ(unbounded.waiting, 0u);
}

TEST_F(LimiterPipelineTest, AnAnswerBeforeTheDeadlineCancelsIt) {
  SilentStore silent;
  Limiter limiter(silent, &memory_, {.policies = &lookup_, .timers = &timers_});
  Answers answers;
  limiter.decide({.app = "web", .policy = "open", .subject = "a"}, answers.callback());
  EXPECT_EQ(timers_.pending(), 1u);
  silent.held[0](Decision{.verdict = {.allowed = true, .limit = 4}});
  EXPECT_EQ(timers_.pending(), 0u);
  clock_.advance(kMicrosPerSecond);
  timers_.fire_due();
  ASSERT_EQ(answers.received.size(), 1u);
  EXPECT_FALSE(answers.received[0]->degraded);
}

TEST_F(LimiterPipelineTest, WaitRetriesAtRetryAfterOnATimerAndAnswersOnce) {
  Limiter limiter(memory_, &memory_, {.policies = &lookup_, .timers = &timers_});
  Answers first;
  limiter.decide({.app = "web", .policy = "paced", .subject = "a"}, first.callback());
  ASSERT_TRUE(first.received.at(0)->verdict.allowed);

  Answers waited;
  limiter.decide({.app = "web", .policy = "paced", .subject = "a", .wait = kMicrosPerSecond},
                 waited.callback());
  EXPECT_TRUE(waited.received.empty()) << "a wait that can succeed must not answer denied";
  EXPECT_EQ(timers_.pending(), 1u);
  clock_.advance(200 * kMicrosPerMilli - 1);
  timers_.fire_due();
  EXPECT_TRUE(waited.received.empty());
  clock_.advance(1);
  timers_.fire_due();
  ASSERT_EQ(waited.received.size(), 1u);
  EXPECT_TRUE(waited.received[0]->verdict.allowed);

  // A wait too short for the retry point is answered, denied, at once.
  Answers too_short;
  limiter.decide(
      {.app = "web", .policy = "paced", .subject = "a", .wait = 200 * kMicrosPerMilli - 1},
      too_short.callback());
  ASSERT_EQ(too_short.received.size(), 1u);
  EXPECT_FALSE(too_short.received[0]->verdict.allowed);
  EXPECT_EQ(too_short.received[0]->verdict.retry_after, 200 * kMicrosPerMilli);
  // Retries are not counted as decisions: three answers, two allowed, one denied.
  EXPECT_EQ(limiter.stats().allowed, 2u);
  EXPECT_EQ(limiter.stats().denied, 1u);
}

TEST_F(LimiterPipelineTest, AcquireAllAnswersEveryRequestInOrderOnce) {
  SilentStore silent;
  Limiter limiter(silent, &memory_, {.policies = &lookup_, .timers = &timers_});
  std::optional<std::vector<StatusOr<Decision>>> batch;
  int calls = 0;
  limiter.decide_all({{.app = "web", .policy = "open", .subject = "a"},
                      {.app = "web", .policy = "nope", .subject = "b"},
                      {.app = "web", .policy = "closed", .subject = "c"}},
                     [&](std::vector<Decided> answers) {
                       ++calls;
                       batch = decisions_of(std::move(answers));
                     });
  ASSERT_EQ(silent.held.size(), 2u) << "both store calls leave before either is answered";
  silent.held[1](Decision{.verdict = {.allowed = false, .limit = 4}});
  EXPECT_EQ(calls, 0);
  silent.held[0](Decision{.verdict = {.allowed = true, .limit = 4}});
  ASSERT_EQ(calls, 1);
  ASSERT_EQ(batch->size(), 3u);
  EXPECT_TRUE((*batch)[0]->verdict.allowed);
  EXPECT_EQ((*batch)[0]->policy, "open");
  EXPECT_EQ((*batch)[1].status().code(), StatusCode::kNotFound);
  EXPECT_FALSE((*batch)[2]->verdict.allowed);
  EXPECT_EQ((*batch)[2]->policy, "closed");
}

TEST_F(LimiterPipelineTest, MetricsCountEveryAnsweredDecisionPerPolicy) {
  Limiter limiter(memory_, &memory_, {.policies = &lookup_, .timers = &timers_});
  for (int i = 0; i < 6; ++i) {
    limiter.decide({.app = "web", .policy = "open", .subject = "m"}, [](auto) {});
  }
  std::string text;
  limiter.metrics().write(text);
  EXPECT_NE(text.find("sluice_decisions_total{policy=\"open\",outcome=\"allowed\"} 4"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sluice_decisions_total{policy=\"open\",outcome=\"denied\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("sluice_decision_duration_seconds_count{policy=\"open\"} 6"),
            std::string::npos);
}

}  // namespace
}  // namespace sluice::service

namespace sluice::service {
namespace {

TEST(LimiterPenaltyTest, ThePipelineAppliesThePenaltyBoxAndCountsItsDenials) {
  ManualClock clock{1'700'000'000'000'000};
  TimerQueue timers{clock, kMicrosPerMilli, TimerQueue::Threading::kManual};
  StaticPolicyLookup lookup{policies()};
  store::MemoryStore memory{clock};
  Limiter limiter(memory, &memory, {.policies = &lookup, .timers = &timers});
  const DecisionRequest request{.app = "web", .policy = "boxed", .subject = "mallory"};
  std::vector<StatusOr<Decision>> answers;
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(answers.emplace_back(limiter.block_on(request).decision).status().code(),
              StatusCode::kOk);
  }
  EXPECT_TRUE(answers[0]->verdict.allowed);
  EXPECT_FALSE(answers[1]->verdict.blocked_until) << "the first denial is a strike";
  EXPECT_EQ(answers[2]->verdict.blocked_until, clock.now() + 60 * kMicrosPerSecond);
  EXPECT_EQ(answers[3]->verdict.retry_after, 60 * kMicrosPerSecond);
  // The bucket refilled long ago, but the block holds until its last microsecond.
  clock.advance(60 * kMicrosPerSecond - 1);
  EXPECT_FALSE(limiter.block_on(request).decision->verdict.allowed);
  clock.advance(1);
  EXPECT_TRUE(limiter.block_on(request).decision->verdict.allowed);
  std::string text;
  limiter.metrics().write(text);
  EXPECT_NE(text.find("sluice_penalty_blocked_total{policy=\"boxed\"} 3"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace sluice::service

namespace sluice::service {
namespace {

TEST(LimiterQuotaMetricsTest, QuotaOperationsAreCountedApartFromDecisions) {
  ManualClock clock{1'700'000'000'000'000};
  TimerQueue timers{clock, kMicrosPerMilli, TimerQueue::Threading::kManual};
  StaticPolicyLookup lookup{policies()};
  store::MemoryStore memory{clock};
  Limiter limiter(memory, &memory, {.policies = &lookup, .timers = &timers});
  const auto call = [](store::QuotaOperation operation, std::int64_t cost) {
    return DecisionRequest{.app = "web",
                           .policy = "metered",
                           .operation = operation_of(operation),
                           .subject = "tenant",
                           .cost = cost};
  };
  ASSERT_TRUE(limiter.block_on(call(store::QuotaOperation::kCharge, 12)).decision->verdict.allowed);
  ASSERT_FALSE(limiter.block_on(call(store::QuotaOperation::kCharge, 4)).decision->verdict.allowed);
  ASSERT_TRUE(limiter.block_on(call(store::QuotaOperation::kRefund, 3)).decision->verdict.allowed);
  std::string text;
  limiter.metrics().write(text);
  for (const char* line : {"sluice_quota_operations_total{policy=\"metered\",operation=\"charge\","
                           "outcome=\"applied\"} 1",
                           "sluice_quota_operations_total{policy=\"metered\",operation=\"charge\","
                           "outcome=\"refused\"} 1",
                           "sluice_quota_operations_total{policy=\"metered\",operation=\"refund\","
                           "outcome=\"applied\"} 1",
                           "sluice_quota_units_total{policy=\"metered\",operation=\"charge\"} 12",
                           "sluice_quota_units_total{policy=\"metered\",operation=\"refund\"} 3",
                           "sluice_decisions_total{policy=\"metered\",outcome=\"allowed\"} 0",
                           "sluice_decisions_total{policy=\"metered\",outcome=\"denied\"} 0"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
}

}  // namespace
}  // namespace sluice::service
