#include "sluice/bench/load_generator.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <latch>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace sluice::bench {
namespace {

class SteadyTicker final : public Ticker {
 public:
  std::int64_t now_ns() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void sleep_until_ns(std::int64_t deadline_ns) override {
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns)));
  }
};

// Everything one load thread owns; nothing is shared while measuring except `sent`, which the
// progress reporter reads (one writer, relaxed, on its own cache line).
struct alignas(64) ThreadState {
  std::atomic<std::uint64_t> sent{0};
  alignas(64) std::uint64_t allowed = 0;
  std::uint64_t denied = 0;
  std::uint64_t errors = 0;
  std::uint64_t degraded = 0;
  std::uint64_t unsent = 0;
  std::int64_t last_reply_ns = 0;
  Histogram latency;
  Histogram service_time;

  void count(const Outcome& outcome) {
    switch (outcome.verdict) {
      case Verdict::kAllowed:
        ++allowed;
        break;
      case Verdict::kDenied:
        ++denied;
        break;
      case Verdict::kError:
        ++errors;
        break;
    }
    if (outcome.degraded && outcome.verdict != Verdict::kError) ++degraded;
  }
};

std::uint64_t elapsed(std::int64_t from, std::int64_t to) {
  return to > from ? static_cast<std::uint64_t>(to - from) : 0;
}

struct Schedule {
  std::int64_t start_ns;
  std::int64_t measure_from_ns;  // end of warm-up
  std::int64_t end_ns;
};

void run_closed(Target& target, const LoadOptions& options, const Schedule& schedule,
                Ticker& ticker, KeySampler& sampler, ThreadState& state) {
  std::string subject_buffer;
  std::uint64_t sent = 0;
  for (;;) {
    const std::string_view subject =
        format_subject(subject_buffer, options.key_prefix, sampler.next());
    const std::int64_t sent_ns = ticker.now_ns();
    if (sent_ns >= schedule.end_ns) break;
    const Outcome outcome = target.decide(subject);
    const std::int64_t reply_ns = ticker.now_ns();
    state.sent.store(++sent, std::memory_order_relaxed);
    if (sent_ns < schedule.measure_from_ns) continue;
    state.count(outcome);
    const std::uint64_t latency = elapsed(sent_ns, reply_ns);
    state.latency.record(latency);
    state.service_time.record(latency);
    state.last_reply_ns = reply_ns;
  }
}

void run_open(Target& target, const LoadOptions& options, const Schedule& schedule, Ticker& ticker,
              KeySampler& sampler, ThreadState& state, int index, int threads) {
  if (!(options.rate_per_thread > 0)) return;
  const double period_ns = 1e9 / options.rate_per_thread;
  // Thread i starts i/T of a period late, so T threads together send evenly spaced requests.
  const double phase_ns = period_ns * index / threads;
  std::string subject_buffer;
  std::uint64_t sent = 0;
  for (std::uint64_t k = 0;; ++k) {
    const auto intended_ns =
        schedule.start_ns +
        static_cast<std::int64_t>(std::llround(phase_ns + period_ns * static_cast<double>(k)));
    if (intended_ns >= schedule.end_ns) break;
    if (ticker.now_ns() >= schedule.end_ns) {
      // Time is up while still catching up: the rest of the schedule is never sent. Count the
      // requests from k on that were due in the measured window.
      const auto due_before = [&](std::int64_t t) {  // requests j with intended(j) < t
        return std::max(
            0.0, std::ceil((static_cast<double>(t - schedule.start_ns) - phase_ns) / period_ns));
      };
      const double first = std::max(static_cast<double>(k), due_before(schedule.measure_from_ns));
      state.unsent +=
          static_cast<std::uint64_t>(std::max(0.0, due_before(schedule.end_ns) - first));
      break;
    }
    const std::string_view subject =
        format_subject(subject_buffer, options.key_prefix, sampler.next());
    ticker.sleep_until_ns(intended_ns);
    const std::int64_t sent_ns = ticker.now_ns();
    const Outcome outcome = target.decide(subject);
    const std::int64_t reply_ns = ticker.now_ns();
    state.sent.store(++sent, std::memory_order_relaxed);
    if (intended_ns < schedule.measure_from_ns) continue;
    state.count(outcome);
    state.latency.record(elapsed(intended_ns, reply_ns));
    state.service_time.record(elapsed(sent_ns, reply_ns));
    state.last_reply_ns = reply_ns;
  }
}

// One async caller: a chain of requests, each sent by the thread that received the answer to the
// one before. `phase` hands the chain on without recursion when an answer comes back before
// decide_async returned (a target that decides in process): the sending loop then goes on itself.
struct AsyncCaller {
  enum Phase : int { kSending, kWaiting, kAnswered };

  ThreadState state;
  std::optional<KeySampler> sampler;
  std::string subject_buffer;
  std::int64_t sent_ns = 0;
  std::uint64_t sent = 0;
  std::atomic<int> phase{kSending};
};

struct AsyncRun {
  Target& target;
  const LoadOptions& options;
  const Schedule& schedule;
  Ticker& ticker;
  std::latch& finished;

  // Sends the caller's next requests until one is answered later (its callback goes on) or the
  // time is up.
  void send(AsyncCaller& caller) {
    for (;;) {
      const std::string_view subject =
          format_subject(caller.subject_buffer, options.key_prefix, caller.sampler->next());
      caller.sent_ns = ticker.now_ns();
      if (caller.sent_ns >= schedule.end_ns) {
        finished.count_down();
        return;
      }
      caller.phase.store(AsyncCaller::kSending, std::memory_order_relaxed);
      target.decide_async(subject, [this, &caller](Outcome outcome) {
        answered(caller, outcome);
        if (caller.phase.exchange(AsyncCaller::kAnswered, std::memory_order_acq_rel) ==
            AsyncCaller::kWaiting) {
          send(caller);  // the sending loop has returned: this thread goes on
        }
      });
      int sending = AsyncCaller::kSending;
      if (caller.phase.compare_exchange_strong(sending, AsyncCaller::kWaiting,
                                               std::memory_order_acq_rel)) {
        return;  // answered later, by the callback
      }
    }
  }

  void answered(AsyncCaller& caller, const Outcome& outcome) {
    const std::int64_t reply_ns = ticker.now_ns();
    caller.state.sent.store(++caller.sent, std::memory_order_relaxed);
    if (caller.sent_ns < schedule.measure_from_ns) return;
    caller.state.count(outcome);
    const std::uint64_t latency = elapsed(caller.sent_ns, reply_ns);
    caller.state.latency.record(latency);
    caller.state.service_time.record(latency);
    caller.state.last_reply_ns = reply_ns;
  }
};

}  // namespace

Ticker& steady_ticker() {
  static SteadyTicker ticker;
  return ticker;
}

std::string_view format_subject(std::string& buffer, std::string_view prefix, std::uint64_t key) {
  constexpr std::size_t kDigits = 20;  // uint64 max
  buffer.resize(prefix.size() + kDigits);
  std::copy(prefix.begin(), prefix.end(), buffer.begin());
  char* digits = buffer.data() + prefix.size();
  const auto [end, error] = std::to_chars(digits, digits + kDigits, key);
  (void)error;  // 20 digits always fit
  return {buffer.data(), static_cast<std::size_t>(end - buffer.data())};
}

namespace {

Schedule start_schedule(const LoadOptions& options, Ticker& ticker) {
  Schedule schedule{};
  schedule.start_ns = ticker.now_ns();
  schedule.measure_from_ns = schedule.start_ns + std::max<std::int64_t>(0, options.warmup_ns);
  schedule.end_ns = schedule.measure_from_ns + std::max<std::int64_t>(1, options.duration_ns);
  return schedule;
}

// Calls options.on_progress every interval until `done()`.
void report_progress(const LoadOptions& options, Ticker& ticker, const Schedule& schedule,
                     const std::vector<ThreadState*>& states, const std::function<bool()>& done) {
  if (!options.on_progress) return;
  const std::int64_t interval = std::max<std::int64_t>(1'000'000, options.progress_interval_ns);
  while (!done()) {
    ticker.sleep_until_ns(ticker.now_ns() + interval);
    Progress progress{.threads = static_cast<int>(states.size()),
                      .elapsed_ns = ticker.now_ns() - schedule.start_ns,
                      .total_ns = schedule.end_ns - schedule.start_ns};
    for (const ThreadState* state : states) {
      progress.decisions += state->sent.load(std::memory_order_relaxed);
    }
    options.on_progress(progress);
  }
}

LoadResult merge(const LoadOptions& options, const Schedule& schedule,
                 const std::vector<ThreadState*>& states) {
  LoadResult result;
  result.threads = static_cast<int>(states.size());
  // The window closes at the end of the duration or with the last reply, whichever is later.
  std::int64_t last_reply_ns = schedule.end_ns;
  for (const ThreadState* state : states) {
    result.allowed += state->allowed;
    result.denied += state->denied;
    result.errors += state->errors;
    result.degraded += state->degraded;
    result.unsent += state->unsent;
    result.latency.merge(state->latency);
    result.service_time.merge(state->service_time);
    last_reply_ns = std::max(last_reply_ns, state->last_reply_ns);
  }
  result.decisions = result.allowed + result.denied + result.errors;
  result.seconds = static_cast<double>(last_reply_ns - schedule.measure_from_ns) / 1e9;
  if (options.mode == LoadMode::kOpen) {
    result.intended_per_second = options.rate_per_thread * result.threads;
  }
  return result;
}

LoadResult run_async_load(Target& target, const LoadOptions& options, Ticker& ticker, int callers) {
  target.prepare_async(callers);
  std::vector<std::unique_ptr<AsyncCaller>> chains;
  std::vector<ThreadState*> states;
  for (int i = 0; i < callers; ++i) {
    chains.push_back(std::make_unique<AsyncCaller>());
    chains.back()->sampler.emplace(options.distribution, options.keys,
                                   stream_seed(options.seed, static_cast<std::uint64_t>(i)));
    states.push_back(&chains.back()->state);
  }
  std::latch finished(callers);
  const Schedule schedule = start_schedule(options, ticker);
  AsyncRun run{target, options, schedule, ticker, finished};
  for (const auto& caller : chains) run.send(*caller);
  report_progress(options, ticker, schedule, states, [&] { return finished.try_wait(); });
  finished.wait();
  return merge(options, schedule, states);
}

// A thread per caller (closed and open loop).
LoadResult run_thread_load(Target& target, const LoadOptions& options, Ticker& ticker,
                           int threads) {
  std::vector<std::unique_ptr<ThreadState>> owned;
  std::vector<ThreadState*> states;
  for (int i = 0; i < threads; ++i) {
    owned.push_back(std::make_unique<ThreadState>());
    states.push_back(owned.back().get());
  }

  // Every thread is created and waiting before the clock starts, so thread start-up (100 threads
  // take a while on a busy machine) is not measured.
  std::latch ready(threads);
  std::latch go(1);
  Schedule schedule{};
  std::atomic<int> finished{0};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      ThreadState& state = *states[static_cast<std::size_t>(i)];
      KeySampler sampler(options.distribution, options.keys,
                         stream_seed(options.seed, static_cast<std::uint64_t>(i)));
      Target& mine = target.for_thread(i);
      ready.count_down();
      go.wait();
      if (options.mode == LoadMode::kOpen) {
        run_open(mine, options, schedule, ticker, sampler, state, i, threads);
      } else {
        run_closed(mine, options, schedule, ticker, sampler, state);
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  ready.wait();
  schedule = start_schedule(options, ticker);
  go.count_down();  // publishes `schedule` to the workers
  report_progress(options, ticker, schedule, states,
                  [&] { return finished.load(std::memory_order_acquire) >= threads; });
  for (std::thread& worker : workers) worker.join();
  return merge(options, schedule, states);
}

}  // namespace

LoadResult run_load(Target& target, const LoadOptions& options, Ticker& ticker) {
  const int threads = std::max(1, options.threads);
  const std::optional<Target::StoreCalls> before = target.store_calls();
  LoadResult result = options.mode == LoadMode::kAsync
                          ? run_async_load(target, options, ticker, threads)
                          : run_thread_load(target, options, ticker, threads);
  if (const std::optional<Target::StoreCalls> after = target.store_calls();
      before && after && after->calls > before->calls) {
    result.decisions_per_call = static_cast<double>(after->decisions - before->decisions) /
                                static_cast<double>(after->calls - before->calls);
  }
  return result;
}

}  // namespace sluice::bench
