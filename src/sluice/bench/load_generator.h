// The load generator behind `sluice bench`: T threads send decisions to a Target for a fixed time
// and record every latency in per-thread histograms, merged at the end.
//
// Three modes:
// - closed loop: each thread sends its next request as soon as the previous one is answered
//   (maximum throughput; latency is service time under that load);
// - async closed loop: the same with `threads` callers that are not threads: each caller's next
//   request is sent by whichever thread received the previous answer (Target::decide_async; for
//   Redis the client's I/O thread), so N callers cost no N threads and no wake-up per decision.
//   This is how an event-loop client (Node.js, for one) runs its concurrent callers;
// - open loop: each thread sends at a fixed rate on a schedule fixed in advance, and latency is
//   measured from each request's *intended* send time, not from when it actually left. A thread
//   held up by a slow reply sends the overdue requests at once and they are charged the wait
//   (no coordinated omission: a stall shows up in the percentiles of every request it delayed,
//   as wrk2 does it). Service time, from the actual send, is recorded as well.
//
// Time comes from a Ticker so tests drive the generator without real time passing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "sluice/bench/histogram.h"
#include "sluice/bench/key_distribution.h"
#include "sluice/core/mutex.h"

namespace sluice::bench {

enum class Verdict : std::uint8_t { kAllowed, kDenied, kError };

struct Outcome {
  Verdict verdict = Verdict::kError;
  // Decided by the policy's failure mode because the store was unreachable.
  bool degraded = false;
};

// What the load is sent to: one decision per call. Must be thread-safe (every load thread calls
// it) and must not throw.
class Target {
 public:
  virtual ~Target() = default;
  virtual Outcome decide(std::string_view subject) = 0;
  // As decide, without blocking: `done` runs once with the outcome, before this returns (the
  // default: decide, then done) or later on another thread. `subject` need not outlive the call.
  using OutcomeCallback = std::function<void(Outcome)>;
  virtual void decide_async(std::string_view subject, OutcomeCallback done) {
    const OutcomeCallback callback = std::move(done);  // by value: an override keeps it for later
    callback(decide(subject));
  }
  // What load thread `index` (0 <= index < threads of the point) sends to, asked once per thread
  // before the clock starts: by default the target itself. A target with per-connection state
  // (HTTP: one keep-alive connection per thread, as 100 clients would have) returns a view that
  // only that thread uses, and may connect it here, outside the measured time. The returned
  // target must outlive the load point.
  virtual Target& for_thread(int index) {
    (void)index;
    return *this;
  }
  // Async closed loop (LoadMode::kAsync): called once per load point before the clock starts,
  // with the number of callers, so a target can open what they need (HTTP: a connection each).
  virtual void prepare_async(int callers) { (void)callers; }
  // The first error a decision returned, for the report; empty when none did.
  virtual std::string first_error() const { return {}; }
  // Decisions sent to the store and the store's calls for them since the target was made, for
  // targets that batch decisions into calls (the embedded Redis store); nullopt for the others.
  struct StoreCalls {
    std::uint64_t decisions = 0;
    std::uint64_t calls = 0;
  };
  virtual std::optional<StoreCalls> store_calls() const { return std::nullopt; }
};

// The first error a target's decisions returned, kept for the report (Target::first_error): the
// later ones cost one relaxed load each. Thread-safe.
class FirstError {
 public:
  void remember(std::string_view error) {
    if (has_error_.load(std::memory_order_relaxed)) return;
    MutexLock lock(mutex_);
    if (text_.empty()) text_ = error;
    has_error_.store(true, std::memory_order_relaxed);
  }
  std::string text() const {
    MutexLock lock(mutex_);
    return text_;
  }

 private:
  std::atomic<bool> has_error_{false};
  mutable Mutex mutex_;
  std::string text_ SLUICE_GUARDED_BY(mutex_);
};

// Monotonic nanoseconds and waiting. Thread-safe.
class Ticker {
 public:
  virtual ~Ticker() = default;
  virtual std::int64_t now_ns() = 0;
  // Returns at or after `deadline_ns` (at once when it has passed).
  virtual void sleep_until_ns(std::int64_t deadline_ns) = 0;
};

// std::chrono::steady_clock and std::this_thread::sleep_until.
Ticker& steady_ticker();

enum class LoadMode { kClosed, kOpen, kAsync };

struct Progress {
  int threads = 0;
  std::int64_t elapsed_ns = 0;  // since the start, warm-up included
  std::int64_t total_ns = 0;    // warm-up + duration
  std::uint64_t decisions = 0;  // sent so far, warm-up included
};

struct LoadOptions {
  int threads = 1;  // >= 1; kAsync: callers (requests in flight), driven by no thread of their own
  // Measured time, after `warmup_ns` of unmeasured load. Nanoseconds, duration > 0.
  std::int64_t duration_ns = 5'000'000'000;
  std::int64_t warmup_ns = 0;
  LoadMode mode = LoadMode::kClosed;
  // Open loop only: requests per second each thread sends (> 0; otherwise nothing is sent).
  // Threads are phase-shifted so the total arrives evenly.
  double rate_per_thread = 0;
  DistributionSpec distribution;
  std::uint64_t keys = 1000;         // >= 1
  std::string key_prefix = "user:";  // subject = key_prefix + decimal key index
  std::uint64_t seed = 1;            // thread i draws keys from stream_seed(seed, i)
  // Called every `progress_interval_ns` on the thread that called run_load while the load runs.
  std::function<void(const Progress&)> on_progress;
  std::int64_t progress_interval_ns = 200'000'000;
};

struct LoadResult {
  int threads = 0;
  // The measured window: from the end of the warm-up to the end of the duration or the last reply
  // of a measured request, whichever is later.
  double seconds = 0;
  std::uint64_t decisions = 0;  // measured requests answered (allowed + denied + errors)
  std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t errors = 0;
  std::uint64_t degraded = 0;  // of allowed + denied
  // Nanoseconds per measured request: from the intended send time in open loop, from the actual
  // send in closed loop (where the two are the same).
  Histogram latency;
  // Nanoseconds from the actual send to the reply.
  Histogram service_time;
  // Open loop: requests/s scheduled, and how many scheduled in the measured window were never
  // sent because the threads were still catching up when the time was over (target too slow).
  double intended_per_second = 0;
  std::uint64_t unsent = 0;
  // Decisions per store call over the point, warm-up included, for targets that count their
  // store calls (Target::store_calls).
  std::optional<double> decisions_per_call;

  double decisions_per_second() const {
    return seconds > 0 ? static_cast<double>(decisions) / seconds : 0;
  }
};

// Runs one load point and returns what was measured. Blocks for warm-up + duration (plus the
// last replies). `target` and `ticker` must outlive the call.
LoadResult run_load(Target& target, const LoadOptions& options, Ticker& ticker = steady_ticker());

// "user:" + 42 -> "user:42" into `buffer` (reused: no allocation once it is large enough).
std::string_view format_subject(std::string& buffer, std::string_view prefix, std::uint64_t key);

}  // namespace sluice::bench
