// Tests of fixed_window, sliding_window and sliding_log (DESIGN.md §2): scenario tables at a
// realistic epoch probing every boundary ±1 µs, and rapidcheck properties over random parameters
// and random request sequences (never over-admitting, exact retry_after, no state change on
// denials and peeks, no capacity from a clock stepping back, no drift, exact expiry).
#include "sluice/algorithm/window.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/validate.h"

namespace sluice::algorithm {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;  // 2023-11-14, a whole second
constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kMs = kMicrosPerMilli;

// ---- scenario tables ----

struct Step {
  std::string_view description;
  Micros at;  // after kEpoch
  std::int64_t cost;
  bool allowed;
  std::int64_t remaining;
  std::optional<Micros> retry_after;
  Micros reset_after;
};

// Replays `steps` from a fresh state, committing what is allowed (as a store does).
template <typename Params>
void run_scenario(const Params& params, std::span<const Step> steps) {
  auto state = initial_state(params, kEpoch + steps.front().at);
  for (const Step& step : steps) {
    SCOPED_TRACE(step.description);
    const Micros now = kEpoch + step.at;
    const Verdict verdict = decide(params, state, step.cost, now);
    EXPECT_EQ(verdict.allowed, step.allowed);
    EXPECT_EQ(verdict.limit, params.limit);
    EXPECT_EQ(verdict.remaining, step.remaining);
    EXPECT_EQ(verdict.retry_after, step.retry_after);
    EXPECT_EQ(verdict.reset_after, step.reset_after);
    EXPECT_EQ(verdict.delay, std::nullopt);
    if (verdict.allowed && step.cost > 0) commit(params, state, step.cost, now);
  }
}

constexpr auto kNever = std::nullopt;

TEST(FixedWindowTest, ScenarioAtTheEpochProbesEveryWindowEdge) {
  // Windows of 1 s aligned to the Unix epoch; kEpoch is a window start.
  const FixedWindow params{.limit = 3, .window = kSecond};
  // description, at, cost, allowed, remaining, retry_after, reset_after
  constexpr Step kSteps[] = {
      {"a peek on an empty window: full limit, nothing to reset", 0, 0, true, 3, kNever, 0},
      {"the first request counts from the window start", 0, 1, true, 2, kNever, kSecond},
      {"a cost of 2 fills the window", 500 * kMs, 2, true, 0, kNever, 500 * kMs},
      {"a peek on a full window is allowed and charges nothing", 500 * kMs, 0, true, 0, kNever,
       500 * kMs},
      {"one µs before the window ends the count still holds", kSecond - 1, 1, false, 0, 1, 1},
      {"a cost above the limit is never grantable", kSecond - 1, 4, false, 0, kNever, 1},
      {"the next window starts exactly at floor(now/W)·W + W", kSecond, 3, true, 0, kNever,
       kSecond},
      {"the last µs of the second window is still full", 2 * kSecond - 1, 1, false, 0, 1, 1},
      {"the window after is empty again", 2 * kSecond, 0, true, 3, kNever, 0},
      {"idle windows are skipped; reset is the end of the current one", 5 * kSecond + 250 * kMs, 1,
       true, 2, kNever, 750 * kMs},
      {"the last µs of a window still counts in it", 6 * kSecond - 1, 2, true, 0, kNever, 1},
      {"the first µs of the next window does not", 6 * kSecond, 3, true, 0, kNever, kSecond},
      {"a cost above the limit on an empty window: never, nothing to reset", 7 * kSecond, 4, false,
       3, kNever, 0},
  };
  run_scenario(params, kSteps);
}

TEST(FixedWindowTest, DecisionOnAKnownWindowEndMatchesTheEpochAlignedWindow) {
  // decide_window_count is the fixed window's decision once the window is known (the Redis
  // module's calendar windows use it); the aligned window decides through it.
  const FixedWindow params{.limit = 3, .window = kSecond};
  const Micros end = kEpoch + kSecond;
  for (const std::int64_t count : {0, 1, 3, 5}) {
    for (const std::int64_t cost : {0, 1, 2, 4}) {
      SCOPED_TRACE(testing::Message() << "count " << count << " cost " << cost);
      const Verdict aligned =
          decide(params, {.window_start = kEpoch, .count = count}, cost, kEpoch + 250 * kMs);
      EXPECT_EQ(decide_window_count(3, count, end, cost, kEpoch + 250 * kMs), aligned);
    }
  }
  const Verdict full = decide_window_count(3, 3, end, 1, end - 1);
  EXPECT_FALSE(full.allowed);
  EXPECT_EQ(full.retry_after, 1);
  EXPECT_EQ(full.reset_after, 1);
  EXPECT_EQ(decide_window_count(3, 0, end, 4, end - 1).retry_after, std::nullopt);
}

TEST(FixedWindowTest, WindowsAlignToTheEpochNotToTheFirstRequest) {
  // kEpoch is 20 s into its minute: floor(kEpoch / 1 min) · 1 min = kEpoch − 20 s.
  const FixedWindow params{.limit = 2, .window = kMicrosPerMinute};
  constexpr Micros kWindowEnd = 40 * kSecond;  // after kEpoch
  constexpr Step kSteps[] = {
      {"the first request resets at the aligned window end", 0, 2, true, 0, kNever, kWindowEnd},
      {"one µs before the aligned end", kWindowEnd - 1, 1, false, 0, 1, 1},
      {"at the aligned end, not a minute after the first request", kWindowEnd, 1, true, 1, kNever,
       kMicrosPerMinute},
  };
  run_scenario(params, kSteps);
  EXPECT_EQ(initial_state(params, kEpoch).window_start, kEpoch - 20 * kSecond);
}

TEST(FixedWindowTest, CostAboveLimitIsDeniedWithoutRetryAfterAndChargesNothing) {
  const FixedWindow params{.limit = 5, .window = kSecond};
  WindowState state = initial_state(params, kEpoch);
  commit(params, state, 2, kEpoch);
  const WindowState before = state;
  const Verdict verdict = decide(params, state, 6, kEpoch + 1);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.retry_after, std::nullopt);
  EXPECT_EQ(verdict.remaining, 3);
  EXPECT_EQ(verdict.reset_after, kSecond - 1);
  EXPECT_EQ(state, before);
}

TEST(FixedWindowTest, CostAboveLimitOnAnEmptyWindowReportsNothingToReset) {
  // Like a peek on the same empty window, and like every other algorithm's unused state.
  const FixedWindow params{.limit = 5, .window = kSecond};
  const WindowState state = initial_state(params, kEpoch);
  EXPECT_EQ(decide(params, state, 0, kEpoch + 300 * kMs).reset_after, 0);
  EXPECT_EQ(decide(params, state, 6, kEpoch + 300 * kMs).reset_after, 0);
}

TEST(FixedWindowTest, ACountingWindowTakesTheCostsItDeniesAndAFreeOneDoesNot) {
  // envoyproxy/ratelimit's counting: 3 + 3 on a limit of 5 is over, and counted, so 1 more is
  // over too; a free window (Sluice's rule) admits it.
  for (const DeniedCost denied_cost : {DeniedCost::kFree, DeniedCost::kCounted}) {
    SCOPED_TRACE(denied_cost == DeniedCost::kFree ? "free" : "counted");
    const FixedWindow params{.limit = 5, .window = kSecond, .denied_cost = denied_cost};
    const std::array limits = {Limit(params)};
    std::array states = {LimitState(initial_state(params, kEpoch))};
    EXPECT_TRUE(evaluate(limits, states, 3, kEpoch, {}).verdict.allowed);
    const PolicyVerdict over = evaluate(limits, states, 3, kEpoch + 100 * kMs, {});
    EXPECT_FALSE(over.verdict.allowed);
    EXPECT_EQ(over.wrote, denied_cost == DeniedCost::kCounted);
    EXPECT_EQ(over.verdict.remaining, denied_cost == DeniedCost::kCounted ? 0 : 2);
    EXPECT_EQ(std::get<WindowState>(states[0]).count, denied_cost == DeniedCost::kCounted ? 6 : 3);
    EXPECT_EQ(evaluate(limits, states, 1, kEpoch + 200 * kMs, {}).verdict.allowed,
              denied_cost == DeniedCost::kFree);
  }
}

TEST(FixedWindowTest, ACountingWindowReportsItsEndEvenEmptyAndMayHoldZero) {
  const FixedWindow zero{.limit = 0, .window = kSecond, .denied_cost = DeniedCost::kCounted};
  EXPECT_TRUE(validate_limit(Limit(zero), "").empty());
  EXPECT_FALSE(validate_limit(Limit(FixedWindow{.limit = 0, .window = kSecond}), "").empty());
  WindowState state = initial_state(zero, kEpoch);
  const Verdict peek = decide(zero, state, 0, kEpoch + 250 * kMs);
  EXPECT_TRUE(peek.allowed);
  EXPECT_EQ(peek.reset_after, 750 * kMs);
  const Verdict denied = decide(zero, state, 1, kEpoch + 250 * kMs);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after, kNever);  // 1 > 0 never fits
  EXPECT_EQ(denied.reset_after, 750 * kMs);
  EXPECT_TRUE(commit_denied(zero, state, 1, kEpoch + 250 * kMs));
  EXPECT_FALSE(decide(zero, state, 0, kEpoch + 500 * kMs).allowed);  // 1 counted: over
  EXPECT_FALSE(commit_denied(zero, state, 0, kEpoch + 500 * kMs));   // a peek counts nothing
}

TEST(FixedWindowTest, ClockSteppingBackStillCountsInTheLaterWindow) {
  const FixedWindow params{.limit = 3, .window = kSecond};
  WindowState state = initial_state(params, kEpoch);
  commit(params, state, 2, kEpoch + kSecond);
  // 1 µs earlier is the previous window, but the state has already seen the later one.
  const Verdict verdict = decide(params, state, 1, kEpoch + kSecond - 1);
  EXPECT_TRUE(verdict.allowed);
  EXPECT_EQ(verdict.remaining, 0);
  EXPECT_EQ(verdict.reset_after, kSecond + 1);
  commit(params, state, 1, kEpoch + kSecond - 1);
  EXPECT_EQ(state, (WindowState{.window_start = kEpoch + kSecond, .count = 3}));
  const Verdict denied = decide(params, state, 1, kEpoch + kSecond - 1);
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.retry_after, kSecond + 1);
}

TEST(SlidingWindowTest, ScenarioFollowsThePreviousWindowsWeightMicrosecondByMicrosecond) {
  // Estimate prev·(W − elapsed)/W + cur with L = 10, W = 1 s; kEpoch starts window A.
  const SlidingWindow params{.limit = 10, .window = kSecond};
  constexpr Step kSteps[] = {
      {"the whole limit at once at the window start", 0, 10, true, 0, kNever, 2 * kSecond},
      {"one more waits until 10·(W − e) + 1·W ≤ 10·W in the next window, e = 100 ms", 0, 1, false,
       0, kSecond + 100 * kMs, 2 * kSecond},
      {"the last µs of window A", kSecond - 1, 1, false, 0, 100 * kMs + 1, kSecond + 1},
      {"the first µs of window B: A still weighs its full 10", kSecond, 1, false, 0, 100 * kMs,
       kSecond},
      {"one µs before the weight has fallen enough", kSecond + 100 * kMs - 1, 1, false, 0, 1,
       900 * kMs + 1},
      {"exactly when prev·(W − e) + (cur + cost)·W = L·W", kSecond + 100 * kMs, 1, true, 0, kNever,
       1900 * kMs},
      {"a peek reports floor((L·W − prev·(W − e))/W) − cur", 1500 * kMs, 0, true, 4, kNever,
       1500 * kMs},
      {"cost 5 waits for e = 600 ms", 1500 * kMs, 5, false, 4, 100 * kMs, 1500 * kMs},
      {"a cost above the limit is never grantable", 1500 * kMs, 11, false, 4, kNever, 1500 * kMs},
      {"one µs before e = 600 ms", 1600 * kMs - 1, 5, false, 4, 1, 1400 * kMs + 1},
      {"at e = 600 ms", 1600 * kMs, 5, true, 0, kNever, 1400 * kMs},
      {"the last µs of window B: A weighs 10·1/W", 2 * kSecond - 1, 0, true, 3, kNever,
       kSecond + 1},
      {"window C: B (6) becomes the previous window", 2 * kSecond, 0, true, 4, kNever, kSecond},
      {"remaining stays 4 while 6·(W − e) > 5·W…", 2 * kSecond + 166'666, 0, true, 4, kNever,
       833'334},
      {"…and becomes 5 one µs later", 2 * kSecond + 166'667, 0, true, 5, kNever, 833'333},
      {"the last µs of window C still weighs B", 3 * kSecond - 1, 0, true, 9, kNever, 1},
      {"window D: C had no traffic, so B is forgotten", 3 * kSecond, 0, true, 10, kNever, 0},
      {"a cost above the limit on an empty estimate: never, nothing to reset", 3 * kSecond, 11,
       false, 10, kNever, 0},
  };
  run_scenario(params, kSteps);
}

TEST(SlidingWindowTest, ClockSteppingBackWeighsThePreviousWindowInFull) {
  const SlidingWindow params{.limit = 10, .window = kSecond};
  SlidingWindowState state = initial_state(params, kEpoch);
  commit(params, state, 10, kEpoch);
  commit(params, state, 5, kEpoch + 1500 * kMs);  // 10·0.5 + 5 = 10
  EXPECT_EQ(decide(params, state, 0, kEpoch + 1500 * kMs).remaining, 0);
  // Back into window A: treated as elapsed 0 in window B, never as more room.
  const Verdict back = decide(params, state, 1, kEpoch + 900 * kMs);
  EXPECT_FALSE(back.allowed);
  EXPECT_EQ(back.remaining, 0);
}

TEST(SlidingLogTest, ScenarioEntriesLeaveExactlyAtTheirTimePlusWindow) {
  const SlidingLog params{.limit = 3, .window = kSecond};
  constexpr Step kSteps[] = {
      {"first entry", 0, 1, true, 2, kNever, kSecond},
      {"a second request in the same µs is its own entry", 0, 1, true, 1, kNever, kSecond},
      {"third entry fills the log", 400 * kMs, 1, true, 0, kNever, kSecond},
      {"denied until the oldest entry leaves at 0 + W", 400 * kMs, 1, false, 0, 600 * kMs, kSecond},
      {"a peek on a full log is allowed", 400 * kMs, 0, true, 0, kNever, kSecond},
      {"one µs before the oldest entries leave", kSecond - 1, 1, false, 0, 1, 400 * kMs + 1},
      {"cost 2 needs both same-µs entries gone, which leave together", kSecond - 1, 2, false, 0, 1,
       400 * kMs + 1},
      {"a cost above the limit is never grantable", kSecond - 1, 4, false, 0, kNever,
       400 * kMs + 1},
      {"at exactly at + W both entries of the same µs have left", kSecond, 2, true, 0, kNever,
       kSecond},
      {"one µs before the 400 ms entry leaves", 1400 * kMs - 1, 1, false, 0, 1, 600 * kMs + 1},
      {"a peek when it has left", 1400 * kMs, 0, true, 1, kNever, 600 * kMs},
      {"its unit is free again", 1400 * kMs, 1, true, 0, kNever, kSecond},
      {"cost 2 waits for the cost-2 entry of 1 s", 1400 * kMs, 2, false, 0, 600 * kMs, kSecond},
      {"one µs before the last entry leaves", 2400 * kMs - 1, 0, true, 2, kNever, 1},
      {"every entry has left: nothing to reset", 2400 * kMs, 0, true, 3, kNever, 0},
      {"a cost above the limit on an empty log: never", 2400 * kMs, 4, false, 3, kNever, 0},
  };
  run_scenario(params, kSteps);
}

TEST(SlidingLogTest, TwoRequestsInTheSameMicrosecondBothCount) {
  const SlidingLog params{.limit = 2, .window = kSecond};
  SlidingLogState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch);
  commit(params, state, 1, kEpoch);
  EXPECT_EQ(state.entries.size(), 2u);
  const Verdict verdict = decide(params, state, 1, kEpoch);
  EXPECT_FALSE(verdict.allowed);
  EXPECT_EQ(verdict.retry_after, kSecond);
}

TEST(SlidingLogTest, CommitDropsEntriesThatLeftTheWindow) {
  const SlidingLog params{.limit = 2, .window = kSecond};
  SlidingLogState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch);
  commit(params, state, 1, kEpoch + 1);
  commit(params, state, 1, kEpoch + kSecond);  // the entry at kEpoch leaves exactly now
  EXPECT_EQ(state.entries, (std::vector<LogEntry>{{.at = kEpoch + 1, .cost = 1},
                                                  {.at = kEpoch + kSecond, .cost = 1}}));
}

TEST(SlidingLogTest, ClockSteppingBackRecordsTheEntryAtTheLatestInstantSeen) {
  const SlidingLog params{.limit = 3, .window = kSecond};
  SlidingLogState state = initial_state(params, kEpoch);
  commit(params, state, 1, kEpoch + kSecond);
  EXPECT_EQ(decide(params, state, 1, kEpoch).reset_after, 2 * kSecond);
  commit(params, state, 1, kEpoch);  // 1 s in the past
  EXPECT_EQ(state.entries.back().at, kEpoch + kSecond);
  EXPECT_EQ(decide(params, state, 0, kEpoch + 2 * kSecond - 1).remaining, 1);
  EXPECT_EQ(decide(params, state, 0, kEpoch + 2 * kSecond).remaining, 3);
}

TEST(SlidingLogTest, ExpiresWhenTheNewestEntryLeaves) {
  const SlidingLog params{.limit = 3, .window = kSecond};
  SlidingLogState state = initial_state(params, kEpoch);
  EXPECT_EQ(expires_at(params, state), 0);
  commit(params, state, 1, kEpoch);
  commit(params, state, 1, kEpoch + 300 * kMs);
  EXPECT_EQ(expires_at(params, state), kEpoch + 1300 * kMs);
}

// ---- properties ----

struct Request {
  Micros gap = 0;  // after the previous request
  std::int64_t cost = 0;
};

std::ostream& operator<<(std::ostream& os, const Request& request) {
  return os << "{gap " << request.gap << ", cost " << request.cost << "}";
}

rc::Gen<Micros> gen_window() {
  return rc::gen::weightedOneOf<Micros>({
      {6, rc::gen::inRange<Micros>(1, 40)},
      {3, rc::gen::inRange<Micros>(40, 5'000)},
      {1, rc::gen::just(kSecond)},
  });
}

// Gaps of 0 (same µs), a few µs, within a window, at its edges ±1 and beyond.
rc::Gen<Micros> gen_gap(Micros window) {
  return rc::gen::weightedOneOf<Micros>({
      {3, rc::gen::just<Micros>(0)},
      {2, rc::gen::inRange<Micros>(1, 4)},
      {4, rc::gen::inRange<Micros>(0, window + 1)},
      {2, rc::gen::element(window - 1, window, window + 1)},
      {1, rc::gen::inRange<Micros>(0, 3 * window + 2)},
  });
}

// Peeks, small and whole-limit costs, and costs no window can ever grant.
rc::Gen<std::int64_t> gen_cost(std::int64_t limit) {
  return rc::gen::weightedOneOf<std::int64_t>({
      {2, rc::gen::just<std::int64_t>(0)},
      {6, rc::gen::inRange<std::int64_t>(1, std::min<std::int64_t>(limit, 3) + 1)},
      {3, rc::gen::inRange<std::int64_t>(1, limit + 1)},
      {1, rc::gen::inRange<std::int64_t>(limit + 1, limit + 3)},
  });
}

std::vector<Request> any_requests(Micros window, std::int64_t limit) {
  return *rc::gen::container<std::vector<Request>>(rc::gen::apply(
      [](Micros gap, std::int64_t cost) { return Request{.gap = gap, .cost = cost}; },
      gen_gap(window), gen_cost(limit)));
}

Micros any_start(Micros window) { return kEpoch + *rc::gen::inRange<Micros>(0, 10 * window); }

// FixedWindow, SlidingWindow or SlidingLog with parameters validation accepts.
template <typename Params>
Params any_params() {
  const Params params{.limit = *rc::gen::inRange<std::int64_t>(1, 13), .window = *gen_window()};
  RC_ASSERT(validate_limit(params, "").empty());
  return params;
}

template <typename Params>
using StateOf = decltype(initial_state(std::declval<const Params&>(), Micros{}));

template <typename Params>
struct Event {
  const StateOf<Params>& before;
  const StateOf<Params>& after;  // == before unless allowed with cost > 0
  const Verdict& verdict;
  Micros now;
  std::int64_t cost;
};

// Replays `requests` from `start`, committing what decide allows with cost > 0 (as evaluate
// does), and calls check(event) after each.
template <typename Params, typename Check>
void replay(const Params& params, Micros start, const std::vector<Request>& requests,
            Check&& check) {
  StateOf<Params> state = initial_state(params, start);
  Micros now = start;
  for (const Request& request : requests) {
    now += request.gap;
    const StateOf<Params> before = state;
    const Verdict verdict = decide(params, before, request.cost, now);
    if (verdict.allowed && request.cost > 0) commit(params, state, request.cost, now);
    check(Event<Params>{before, state, verdict, now, request.cost});
  }
}

template <typename Params>
void check_retry_after_is_exact() {
  const auto params = any_params<Params>();
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<Params>& e) {
           if (e.verdict.allowed) {
             RC_ASSERT(!e.verdict.retry_after);
             return;
           }
           RC_ASSERT(e.verdict.retry_after.has_value() == (e.cost <= params.limit));
           if (!e.verdict.retry_after) return;
           const Micros retry = *e.verdict.retry_after;
           RC_ASSERT(retry >= 1);
           RC_ASSERT(decide(params, e.before, e.cost, e.now + retry).allowed);
           RC_ASSERT(!decide(params, e.before, e.cost, e.now + retry - 1).allowed);
         });
}

// Through evaluate (what stores call): a denial or a peek leaves the stored state equal.
template <typename Params>
void check_denials_and_peeks_change_nothing() {
  const auto params = any_params<Params>();
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<Params>& e) {
           const std::array<Limit, 1> limits{params};
           std::array<LimitState, 1> states{e.before};
           const PolicyVerdict policy = evaluate(limits, states, e.cost, e.now, "lease");
           RC_ASSERT(policy.verdict == e.verdict);
           RC_ASSERT(policy.limit_index == 0u);
           if (!e.verdict.allowed || e.cost == 0) {
             RC_ASSERT(std::get<StateOf<Params>>(states[0]) == e.before);
           } else {
             RC_ASSERT(std::get<StateOf<Params>>(states[0]) == e.after);
           }
         });
}

// A decision at an instant before the last commit never sees more room than at that commit.
template <typename Params>
void check_clock_stepping_back_creates_no_capacity() {
  const auto params = any_params<Params>();
  std::optional<Micros> last_commit;
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<Params>& e) {
           if (e.verdict.allowed && e.cost > 0) last_commit = e.now;
           if (!last_commit) return;
           const Micros w = params.window;
           for (const Micros back : {Micros{1}, w / 2 + 1, w, w + 1, 2 * w + 1}) {
             const Micros earlier = *last_commit - back;
             const Verdict then = decide(params, e.after, 0, *last_commit);
             const Verdict before_then = decide(params, e.after, 0, earlier);
             RC_ASSERT(before_then.remaining <= then.remaining);
             for (const std::int64_t cost : {std::int64_t{1}, e.cost, params.limit}) {
               if (decide(params, e.after, cost, earlier).allowed) {
                 RC_ASSERT(decide(params, e.after, cost, *last_commit).allowed);
               }
             }
           }
         });
}

// From expires_at on, the stored state decides exactly like a fresh one (so a store may drop it).
template <typename Params>
void check_state_equals_initial_from_expires_at() {
  const auto params = any_params<Params>();
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<Params>& e) {
           const Micros from = std::max(expires_at(params, e.after), e.now);
           for (const Micros t : {from, from + 1, from + params.window}) {
             const auto fresh = initial_state(params, t);
             for (const std::int64_t cost :
                  {std::int64_t{0}, std::int64_t{1}, params.limit, params.limit + 1}) {
               RC_ASSERT(decide(params, e.after, cost, t) == decide(params, fresh, cost, t));
             }
           }
         });
}

// remaining is exactly what could still be granted; a denial reports the state as a peek does;
// an allowed verdict reports the state after the request; reset_after is when the state is
// unused again, and not one µs earlier.
template <typename Params>
void check_verdicts_describe_the_state() {
  const auto params = any_params<Params>();
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<Params>& e) {
           const Verdict peek = decide(params, e.before, 0, e.now);
           RC_ASSERT(peek.allowed);
           RC_ASSERT(decide(params, e.before, peek.remaining, e.now).allowed);
           RC_ASSERT(!decide(params, e.before, peek.remaining + 1, e.now).allowed);
           const Verdict reported = e.verdict.allowed ? decide(params, e.after, 0, e.now) : peek;
           RC_ASSERT(e.verdict.remaining == reported.remaining);
           RC_ASSERT(e.verdict.reset_after == reported.reset_after);
           const Micros unused_at = e.now + reported.reset_after;
           const auto fresh = initial_state(params, unused_at);
           RC_ASSERT(decide(params, e.after, 0, unused_at) == decide(params, fresh, 0, unused_at));
           if (reported.reset_after > 0) {
             RC_ASSERT(decide(params, e.after, 0, unused_at - 1).remaining < params.limit);
           }
         });
}

// Greedy client: asks for `cost` at once, and when denied comes back exactly at retry_after.
// Returns how many requests were admitted in [start, end).
template <typename Params>
std::int64_t greedy_admitted(const Params& params, Micros start, Micros end, std::int64_t cost) {
  StateOf<Params> state = initial_state(params, start);
  std::int64_t admitted = 0;
  for (Micros now = start; now < end;) {
    const Verdict verdict = decide(params, state, cost, now);
    if (verdict.allowed) {
      commit(params, state, cost, now);
      ++admitted;
    } else {
      RC_ASSERT(verdict.retry_after.has_value());
      now += *verdict.retry_after;
    }
  }
  return admitted;
}

// -- fixed_window --

RC_GTEST_PROP(FixedWindowProperty, AdmitsExactlyWhileTheAlignedWindowHasRoom, ()) {
  const auto params = any_params<FixedWindow>();
  std::map<Micros, std::int64_t> admitted;  // by window index floor(t / W)
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<FixedWindow>& e) {
           std::int64_t& count = admitted[e.now / params.window];
           RC_ASSERT(e.verdict.allowed == (count + e.cost <= params.limit));
           if (e.verdict.allowed) count += e.cost;
           RC_ASSERT(count <= params.limit);
         });
}

RC_GTEST_PROP(FixedWindowProperty, RetryAfterIsExact, ()) {
  check_retry_after_is_exact<FixedWindow>();
}

RC_GTEST_PROP(FixedWindowProperty, DenialsAndPeeksLeaveTheStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing<FixedWindow>();
}

RC_GTEST_PROP(FixedWindowProperty, ClockSteppingBackCreatesNoCapacity, ()) {
  check_clock_stepping_back_creates_no_capacity<FixedWindow>();
}

RC_GTEST_PROP(FixedWindowProperty, StateEqualsInitialFromExpiresAt, ()) {
  check_state_equals_initial_from_expires_at<FixedWindow>();
}

RC_GTEST_PROP(FixedWindowProperty, VerdictsDescribeTheStateTheyLeave, ()) {
  check_verdicts_describe_the_state<FixedWindow>();
}

RC_GTEST_PROP(FixedWindowProperty, GreedyClientGetsExactlyTheLimitPerWindowWithoutDrift, ()) {
  const auto params = any_params<FixedWindow>();
  const std::int64_t cost = *rc::gen::inRange<std::int64_t>(1, params.limit + 1);
  const Micros start = any_start(params.window);
  const std::int64_t windows = *rc::gen::inRange<std::int64_t>(1, 300);
  // The partial window `start` falls in, then `windows` whole ones.
  const Micros end = (start / params.window + 1 + windows) * params.window;
  RC_ASSERT(greedy_admitted(params, start, end, cost) == (windows + 1) * (params.limit / cost));
}

// -- sliding_window --

RC_GTEST_PROP(SlidingWindowProperty, AdmitsExactlyWhileTheEstimateHasRoom, ()) {
  const auto params = any_params<SlidingWindow>();
  const Micros w = params.window;
  std::map<Micros, std::int64_t> admitted;  // by window index floor(t / W)
  replay(params, any_start(w), any_requests(w, params.limit), [&](const Event<SlidingWindow>& e) {
    const Micros index = e.now / w;
    const Micros elapsed = e.now - index * w;
    const std::int64_t previous = admitted[index - 1];
    std::int64_t& current = admitted[index];
    const bool fits = previous * (w - elapsed) + (current + e.cost) * w <= params.limit * w;
    RC_ASSERT(e.verdict.allowed == fits);
    if (e.verdict.allowed) current += e.cost;
    RC_ASSERT(current <= params.limit);
    RC_ASSERT(previous * (w - elapsed) + current * w <= params.limit * w);
  });
}

RC_GTEST_PROP(SlidingWindowProperty, RetryAfterIsExactForTheEstimate, ()) {
  check_retry_after_is_exact<SlidingWindow>();
}

RC_GTEST_PROP(SlidingWindowProperty, DenialsAndPeeksLeaveTheStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing<SlidingWindow>();
}

RC_GTEST_PROP(SlidingWindowProperty, ClockSteppingBackCreatesNoCapacity, ()) {
  check_clock_stepping_back_creates_no_capacity<SlidingWindow>();
}

RC_GTEST_PROP(SlidingWindowProperty, StateEqualsInitialFromExpiresAt, ()) {
  check_state_equals_initial_from_expires_at<SlidingWindow>();
}

RC_GTEST_PROP(SlidingWindowProperty, VerdictsDescribeTheStateTheyLeave, ()) {
  check_verdicts_describe_the_state<SlidingWindow>();
}

// -- sliding_log --

RC_GTEST_PROP(SlidingLogProperty, AdmitsExactlyWhileTheLastWindowHasRoom, ()) {
  const auto params = any_params<SlidingLog>();
  std::vector<LogEntry> admitted;
  replay(params, any_start(params.window), any_requests(params.window, params.limit),
         [&](const Event<SlidingLog>& e) {
           // Units admitted in (now − W, now]; admissions are the only moments this grows.
           std::int64_t used = 0;
           for (const LogEntry& entry : admitted) {
             if (entry.at > e.now - params.window) used += entry.cost;
           }
           RC_ASSERT(e.verdict.allowed == (used + e.cost <= params.limit));
           if (e.verdict.allowed && e.cost > 0) {
             admitted.push_back({.at = e.now, .cost = e.cost});
             RC_ASSERT(used + e.cost <= params.limit);
           }
           RC_ASSERT(e.after.entries.size() <= static_cast<std::size_t>(params.limit));
         });
}

RC_GTEST_PROP(SlidingLogProperty, RetryAfterIsExact, ()) {
  check_retry_after_is_exact<SlidingLog>();
}

RC_GTEST_PROP(SlidingLogProperty, DenialsAndPeeksLeaveTheStateUnchanged, ()) {
  check_denials_and_peeks_change_nothing<SlidingLog>();
}

RC_GTEST_PROP(SlidingLogProperty, ClockSteppingBackCreatesNoCapacity, ()) {
  check_clock_stepping_back_creates_no_capacity<SlidingLog>();
}

RC_GTEST_PROP(SlidingLogProperty, StateEqualsInitialFromExpiresAt, ()) {
  check_state_equals_initial_from_expires_at<SlidingLog>();
}

RC_GTEST_PROP(SlidingLogProperty, VerdictsDescribeTheStateTheyLeave, ()) {
  check_verdicts_describe_the_state<SlidingLog>();
}

RC_GTEST_PROP(SlidingLogProperty, GreedyClientGetsExactlyTheLimitPerWindowWithoutDrift, ()) {
  const auto params = any_params<SlidingLog>();
  const std::int64_t cost = *rc::gen::inRange<std::int64_t>(1, params.limit + 1);
  const Micros start = any_start(params.window);
  const std::int64_t windows = *rc::gen::inRange<std::int64_t>(1, 300);
  RC_ASSERT(greedy_admitted(params, start, start + windows * params.window, cost) ==
            windows * (params.limit / cost));
}

}  // namespace
}  // namespace sluice::algorithm
