#include "sluice/bench/load_generator.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <latch>
#include <memory>
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

LoadResult run_load(Target& target, const LoadOptions& options, Ticker& ticker) {
  const int threads = std::max(1, options.threads);
  std::vector<std::unique_ptr<ThreadState>> states;
  states.reserve(static_cast<std::size_t>(threads));
  for (int i = 0; i < threads; ++i) states.push_back(std::make_unique<ThreadState>());

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
  schedule.start_ns = ticker.now_ns();
  schedule.measure_from_ns = schedule.start_ns + std::max<std::int64_t>(0, options.warmup_ns);
  schedule.end_ns = schedule.measure_from_ns + std::max<std::int64_t>(1, options.duration_ns);
  go.count_down();  // publishes `schedule` to the workers

  if (options.on_progress) {
    const std::int64_t interval = std::max<std::int64_t>(1'000'000, options.progress_interval_ns);
    while (finished.load(std::memory_order_acquire) < threads) {
      ticker.sleep_until_ns(ticker.now_ns() + interval);
      Progress progress{.threads = threads,
                        .elapsed_ns = ticker.now_ns() - schedule.start_ns,
                        .total_ns = schedule.end_ns - schedule.start_ns};
      for (const auto& state : states) {
        progress.decisions += state->sent.load(std::memory_order_relaxed);
      }
      options.on_progress(progress);
    }
  }
  for (std::thread& worker : workers) worker.join();

  LoadResult result;
  result.threads = threads;
  // The window closes at the end of the duration or with the last reply, whichever is later.
  std::int64_t last_reply_ns = schedule.end_ns;
  for (const auto& state : states) {
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
    result.intended_per_second = options.rate_per_thread * threads;
  }
  return result;
}

}  // namespace sluice::bench
