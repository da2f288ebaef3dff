// Micro-benchmarks of the pure algorithm step (decide, then commit when allowed) for every
// algorithm, and of evaluate() over one- and two-limit policies. Target (docs/benchmarks.md):
// one step at most 50 ns.
//
// Every case starts from the algorithm's initial state at a realistic epoch and moves the clock
// forward 5 ms per request: 200 requests/s against limits of 100/s, so after the first burst
// about half the requests are allowed and half denied, and both paths are timed in a realistic
// mix. The "allowed" counter reports the fraction actually allowed. The growing states
// (sliding_log, concurrency) stay bounded by their limit of 100: entries leave the window and
// leases expire (holders that never release: the largest state the limit permits).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "sluice/algorithm/concurrency.h"
#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/leaky_bucket.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/state.h"
#include "sluice/algorithm/token_bucket.h"
#include "sluice/algorithm/window.h"
#include "sluice/time.h"
#include "sluice/verdict.h"

namespace sluice::algorithm {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;  // November 2023
constexpr Micros kStep = 5 * kMicrosPerMilli;     // 200 requests per second
// A lease id as the memory store makes them: 32 hex digits (too long for the small-string buffer,
// so storing it allocates, as it does in production).
constexpr std::string_view kLeaseId = "0123456789abcdef0123456789abcdef";

void report_allowed(benchmark::State& bench, std::int64_t allowed) {
  bench.counters["allowed"] =
      benchmark::Counter(static_cast<double>(allowed), benchmark::Counter::kAvgIterations);
}

// decide + commit-when-allowed for algorithms whose commit takes no lease id.
template <typename Params, typename State>
void run_step(benchmark::State& bench, const Params& params, State state) {
  Micros now = kEpoch;
  std::int64_t allowed = 0;
  for (auto _ : bench) {
    now += kStep;
    Verdict verdict = decide(params, state, 1, now);
    if (verdict.allowed) {
      commit(params, state, 1, now);
      ++allowed;
    }
    benchmark::DoNotOptimize(verdict);
    benchmark::DoNotOptimize(state);
  }
  report_allowed(bench, allowed);
}

void BM_TokenBucketSmooth(benchmark::State& bench) {
  const TokenBucket params{.capacity = 10, .refill = 100, .period = kMicrosPerSecond};
  run_step(bench, params, std::get<TatState>(initial_state(params, kEpoch)));
}

void BM_TokenBucketInterval(benchmark::State& bench) {
  const TokenBucket params{.capacity = 100,
                           .refill = 100,
                           .period = kMicrosPerSecond,
                           .refill_mode = RefillMode::kInterval};
  run_step(bench, params, std::get<IntervalBucketState>(initial_state(params, kEpoch)));
}

void BM_Gcra(benchmark::State& bench) {
  const Gcra params{.rate = 100, .period = kMicrosPerSecond, .burst = 9};
  run_step(bench, params, initial_state(params, kEpoch));
}

void BM_LeakyBucket(benchmark::State& bench) {
  const LeakyBucket params{
      .rate = 100, .period = kMicrosPerSecond, .max_delay = 100 * kMicrosPerMilli};
  run_step(bench, params, initial_state(params, kEpoch));
}

void BM_FixedWindow(benchmark::State& bench) {
  const FixedWindow params{.limit = 100, .window = kMicrosPerSecond};
  run_step(bench, params, initial_state(params, kEpoch));
}

void BM_SlidingWindow(benchmark::State& bench) {
  const SlidingWindow params{.limit = 100, .window = kMicrosPerSecond};
  run_step(bench, params, initial_state(params, kEpoch));
}

// Up to 100 entries: every decision sums the live ones.
void BM_SlidingLog(benchmark::State& bench) {
  const SlidingLog params{.limit = 100, .window = kMicrosPerSecond};
  run_step(bench, params, initial_state(params, kEpoch));
}

// Up to 100 live leases, each held for its whole lease_ttl.
void BM_Concurrency(benchmark::State& bench) {
  const Concurrency params{.limit = 100, .lease_ttl = kMicrosPerSecond};
  ConcurrencyState state = initial_state(params, kEpoch);
  Micros now = kEpoch;
  std::int64_t allowed = 0;
  for (auto _ : bench) {
    now += kStep;
    Verdict verdict = decide(params, state, 1, now);
    if (verdict.allowed) {
      commit(params, state, 1, now, kLeaseId);
      ++allowed;
    }
    benchmark::DoNotOptimize(verdict);
    benchmark::DoNotOptimize(state);
  }
  report_allowed(bench, allowed);
}

// evaluate(): the variant dispatch and all-or-nothing logic the stores call.
void run_evaluate(benchmark::State& bench, const std::vector<Limit>& limits) {
  std::vector<LimitState> states;
  for (const Limit& limit : limits) states.push_back(initial_state(limit, kEpoch));
  Micros now = kEpoch;
  std::int64_t allowed = 0;
  for (auto _ : bench) {
    now += kStep;
    PolicyVerdict verdict = evaluate(limits, states, 1, now, {});
    allowed += verdict.verdict.allowed ? 1 : 0;
    benchmark::DoNotOptimize(verdict);
  }
  report_allowed(bench, allowed);
}

void BM_EvaluateGcra(benchmark::State& bench) {
  run_evaluate(bench, {Gcra{.rate = 100, .period = kMicrosPerSecond, .burst = 9}});
}

// 100/s (burst 10) and 5 000/min: against 200 requests/s each limit decides part of the time.
void BM_EvaluateTwoLimits(benchmark::State& bench) {
  run_evaluate(bench, {Gcra{.rate = 100, .period = kMicrosPerSecond, .burst = 9},
                       FixedWindow{.limit = 5'000, .window = kMicrosPerMinute}});
}

BENCHMARK(BM_TokenBucketSmooth)->Name("step/token_bucket_smooth");
BENCHMARK(BM_TokenBucketInterval)->Name("step/token_bucket_interval");
BENCHMARK(BM_Gcra)->Name("step/gcra");
BENCHMARK(BM_LeakyBucket)->Name("step/leaky_bucket");
BENCHMARK(BM_FixedWindow)->Name("step/fixed_window");
BENCHMARK(BM_SlidingWindow)->Name("step/sliding_window");
BENCHMARK(BM_SlidingLog)->Name("step/sliding_log_100");
BENCHMARK(BM_Concurrency)->Name("step/concurrency_100");
BENCHMARK(BM_EvaluateGcra)->Name("evaluate/gcra");
BENCHMARK(BM_EvaluateTwoLimits)->Name("evaluate/gcra+fixed_window");

}  // namespace
}  // namespace sluice::algorithm
