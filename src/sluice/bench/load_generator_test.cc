#include "sluice/bench/load_generator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace sluice::bench {
namespace {

constexpr std::int64_t kMicro = 1'000;
constexpr std::int64_t kMilli = 1'000'000;
constexpr std::int64_t kSecond = 1'000'000'000;

// Time moves only when someone says so: a decision "takes" time by advancing it, and sleeping
// jumps to the deadline. Each thread has its own timeline, all starting at the same instant, so
// threads behave as if each had a core of its own and results do not depend on scheduling.
class FakeTicker final : public Ticker {
 public:
  std::int64_t now_ns() override { return mine(); }
  void sleep_until_ns(std::int64_t deadline) override {
    std::int64_t& now = mine();
    if (now < deadline) now = deadline;
  }
  void advance(std::int64_t by) { mine() += by; }

 private:
  std::int64_t& mine() {
    std::lock_guard lock(mu_);
    return now_.try_emplace(std::this_thread::get_id(), kStart).first->second;
  }

  static constexpr std::int64_t kStart = 1'000 * kSecond;
  std::mutex mu_;
  // std::map never moves its elements: a reference stays valid while other threads insert.
  std::map<std::thread::id, std::int64_t> now_;
};

// Each decision takes `service_ns` (and `stall_ns` once, on decision number `stall_at`), allows
// every other one and fails one in ten; remembers every subject.
class FakeTarget final : public Target {
 public:
  FakeTarget(FakeTicker& ticker, std::int64_t service_ns)
      : ticker_(ticker), service_ns_(service_ns) {}

  Outcome decide(std::string_view subject) override {
    const std::uint64_t n = calls_.fetch_add(1);
    ticker_.advance(n == stall_at_ ? stall_ns_ : service_ns_);
    {
      std::lock_guard lock(mu_);
      ++subjects_[std::string(subject)];
    }
    if (n % 10 == 9) return {.verdict = Verdict::kError};
    return {.verdict = n % 2 == 0 ? Verdict::kAllowed : Verdict::kDenied, .degraded = n % 4 == 0};
  }

  void stall_once(std::uint64_t at, std::int64_t for_ns) {
    stall_at_ = at;
    stall_ns_ = for_ns;
  }
  std::uint64_t calls() const { return calls_.load(); }
  std::map<std::string, int> subjects() const {
    std::lock_guard lock(mu_);
    return subjects_;
  }

 private:
  FakeTicker& ticker_;
  std::int64_t service_ns_;
  std::uint64_t stall_at_ = UINT64_MAX;
  std::int64_t stall_ns_ = 0;
  std::atomic<std::uint64_t> calls_{0};
  mutable std::mutex mu_;
  std::map<std::string, int> subjects_;
};

TEST(LoadGeneratorTest, ClosedLoopOneThreadMeasuresEveryDecisionOfTheDuration) {
  FakeTicker ticker;
  FakeTarget target(ticker, 100 * kMicro);
  const LoadResult r = run_load(target, {.threads = 1, .duration_ns = 1 * kSecond}, ticker);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.decisions, 10'000u);  // 1 s / 100 µs
  EXPECT_EQ(target.calls(), 10'000u);
  EXPECT_EQ(r.errors, 1'000u);
  EXPECT_EQ(r.allowed + r.denied + r.errors, r.decisions);
  EXPECT_EQ(r.allowed, 5'000u);
  EXPECT_EQ(r.degraded, 2'500u);
  EXPECT_DOUBLE_EQ(r.seconds, 1.0);
  EXPECT_DOUBLE_EQ(r.decisions_per_second(), 10'000.0);
  EXPECT_EQ(r.latency.count(), 10'000u);
  EXPECT_EQ(r.latency.min(), 100'000u);
  EXPECT_EQ(r.latency.max(), 100'000u);
  EXPECT_EQ(r.service_time.count(), 10'000u);
}

TEST(LoadGeneratorTest, WarmUpIsLoadedButNotMeasured) {
  FakeTicker ticker;
  FakeTarget target(ticker, 1 * kMilli);
  const LoadResult r = run_load(
      target, {.threads = 1, .duration_ns = 1 * kSecond, .warmup_ns = 500 * kMilli}, ticker);
  EXPECT_EQ(target.calls(), 1'500u);
  EXPECT_EQ(r.decisions, 1'000u);
  EXPECT_DOUBLE_EQ(r.seconds, 1.0);
}

TEST(LoadGeneratorTest, ClosedLoopManyThreadsAddUp) {
  FakeTicker ticker;
  FakeTarget target(ticker, 10 * kMicro);
  const LoadResult r = run_load(target, {.threads = 8, .duration_ns = 100 * kMilli}, ticker);
  EXPECT_EQ(r.threads, 8);
  EXPECT_EQ(r.decisions, 80'000u);  // 8 x 100 ms / 10 µs
  EXPECT_EQ(r.decisions, target.calls());
  EXPECT_EQ(r.allowed + r.denied + r.errors, r.decisions);
  EXPECT_EQ(r.latency.count(), r.decisions);
}

// Hands each load thread its own FakeTarget and remembers which thread asked for which.
class PerThreadTarget final : public Target {
 public:
  explicit PerThreadTarget(FakeTicker& ticker) : ticker_(ticker) {}
  Outcome decide(std::string_view) override { return {.verdict = Verdict::kError}; }
  Target& for_thread(int index) override {
    std::lock_guard lock(mu_);
    auto [it, inserted] = views_.try_emplace(index, ticker_, 10 * kMicro);
    owners_[index].insert(std::this_thread::get_id());
    return it->second;
  }
  std::map<int, FakeTarget>& views() { return views_; }
  std::map<int, std::set<std::thread::id>>& owners() { return owners_; }

 private:
  FakeTicker& ticker_;
  std::mutex mu_;
  std::map<int, FakeTarget> views_;  // std::map: a view stays put while others are added
  std::map<int, std::set<std::thread::id>> owners_;
};

// An answer that comes back before decide_async returns (the default, for a target deciding in
// process) must not recurse: 100 000 decisions in one chain would overflow the stack.
TEST(LoadGeneratorTest, AsyncCallersAnsweredAtOnceLoopWithoutRecursion) {
  FakeTicker ticker;
  FakeTarget target(ticker, 1 * kMicro);
  const LoadResult r = run_load(
      target, {.threads = 3, .duration_ns = 100 * kMilli, .mode = LoadMode::kAsync}, ticker);
  // One timeline: the first caller keeps it busy to the end, the others find the time up.
  EXPECT_EQ(r.decisions, 100'000u);
  EXPECT_EQ(target.calls(), 100'000u);
  EXPECT_EQ(r.latency.count(), r.decisions);
  EXPECT_EQ(r.threads, 3);
}

// Answers from another thread: each caller's next request is sent by the thread that answered,
// and every caller keeps one request in flight until the time is up.
class ThreadedTarget final : public Target {
 public:
  ThreadedTarget(FakeTicker& ticker, std::int64_t service_ns)
      : inner_(ticker, service_ns), worker_([this] { serve(); }) {}
  ~ThreadedTarget() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }

  Outcome decide(std::string_view subject) override { return inner_.decide(subject); }
  void decide_async(std::string_view subject, OutcomeCallback done) override {
    {
      std::lock_guard lock(mu_);
      queue_.emplace_back(std::string(subject), std::move(done));
      max_queued_ = std::max(max_queued_, queue_.size());
    }
    wake_.notify_all();
  }
  // The most requests ever waiting at once: the callers in flight.
  std::size_t max_queued() {
    std::lock_guard lock(mu_);
    return max_queued_;
  }

 private:
  void serve() {
    std::unique_lock lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto [subject, done] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      done(inner_.decide(subject));  // may queue the caller's next request
      lock.lock();
    }
  }

  FakeTarget inner_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, OutcomeCallback>> queue_;
  bool stop_ = false;
  std::size_t max_queued_ = 0;
  std::thread worker_;
};

TEST(LoadGeneratorTest, AsyncCallersAnsweredOnAnotherThreadEachKeepOneRequestInFlight) {
  FakeTicker ticker;
  ThreadedTarget target(ticker, 10 * kMicro);
  const LoadResult r = run_load(
      target, {.threads = 4, .duration_ns = 10 * kMilli, .mode = LoadMode::kAsync}, ticker);
  // The worker's timeline: 10 ms of 10 µs answers, whichever caller they belong to.
  EXPECT_GE(r.decisions, 990u);
  EXPECT_LE(r.decisions, 1'004u);
  EXPECT_EQ(r.allowed + r.denied + r.errors, r.decisions);
  EXPECT_EQ(r.latency.count(), r.decisions);
  // While the worker answers one request, each other caller has its own waiting: never more
  // than one per caller, and all four at once.
  EXPECT_EQ(target.max_queued(), 4u);
}

TEST(LoadGeneratorTest, EachThreadSendsOnlyToTheViewItWasGiven) {
  FakeTicker ticker;
  PerThreadTarget target(ticker);
  const LoadResult r = run_load(target, {.threads = 4, .duration_ns = 1 * kMilli}, ticker);
  ASSERT_EQ(target.views().size(), 4u);  // indices 0..3, once each
  std::uint64_t calls = 0;
  for (auto& [index, view] : target.views()) {
    SCOPED_TRACE(index);
    EXPECT_EQ(target.owners()[index].size(), 1u);
    EXPECT_EQ(view.calls(), 100u);  // 1 ms / 10 µs, all on this thread's view
    calls += view.calls();
  }
  EXPECT_EQ(r.decisions, calls);  // nothing went to the shared target (it only errs)
  EXPECT_EQ(r.errors, calls / 10);
}

TEST(LoadGeneratorTest, SubjectsFollowTheDistributionAndPrefix) {
  FakeTicker ticker;
  {
    FakeTarget target(ticker, 10 * kMicro);
    run_load(target,
             {.threads = 2,
              .duration_ns = 10 * kMilli,
              .distribution = {.kind = DistributionKind::kHot},
              .keys = 100,
              .key_prefix = "ip:"},
             ticker);
    EXPECT_EQ(target.subjects().size(), 1u);
    EXPECT_EQ(target.subjects().begin()->first, "ip:0");
  }
  {
    FakeTarget target(ticker, 1 * kMicro);
    run_load(target,
             {.threads = 4,
              .duration_ns = 20 * kMilli,
              .distribution = {.kind = DistributionKind::kUniform},
              .keys = 50},
             ticker);
    const std::map<std::string, int> subjects = target.subjects();
    EXPECT_EQ(subjects.size(), 50u);  // 80 000 draws over 50 keys: all seen
    EXPECT_TRUE(subjects.count("user:0") == 1 && subjects.count("user:49") == 1);
  }
}

TEST(LoadGeneratorTest, OpenLoopSendsAtTheRateAndIdlesBetween) {
  FakeTicker ticker;
  FakeTarget target(ticker, 100 * kMicro);
  const LoadResult r = run_load(
      target,
      {.threads = 2, .duration_ns = 1 * kSecond, .mode = LoadMode::kOpen, .rate_per_thread = 500},
      ticker);
  EXPECT_EQ(r.decisions, 1'000u);  // 2 threads x 500/s x 1 s
  EXPECT_EQ(r.unsent, 0u);
  EXPECT_DOUBLE_EQ(r.intended_per_second, 1'000.0);
  EXPECT_NEAR(r.decisions_per_second(), 1'000.0, 1.0);
}

TEST(LoadGeneratorTest, OpenLoopChargesAStallToEveryRequestItDelayed) {
  // 1 000 requests/s, 100 µs each, and one 10 ms stall: the 10 requests due during the stall are
  // sent late and wait for it. Measured from the intended send time they show 10, 9, ... 1 ms
  // (coordinated omission avoided); the service time sees only the one slow request.
  FakeTicker ticker;
  FakeTarget target(ticker, 100 * kMicro);
  target.stall_once(500, 10 * kMilli);
  const LoadResult r = run_load(
      target,
      {.threads = 1, .duration_ns = 1 * kSecond, .mode = LoadMode::kOpen, .rate_per_thread = 1'000},
      ticker);
  EXPECT_EQ(r.decisions, 1'000u);
  EXPECT_EQ(r.latency.max(), 10 * kMilli);
  EXPECT_GE(r.latency.percentile(0.995), 4 * kMilli);  // rank 995: among the delayed ones
  EXPECT_LE(r.latency.percentile(0.98), 101 * kMicro);
  EXPECT_EQ(r.service_time.max(), 10 * kMilli);
  EXPECT_LE(r.service_time.percentile(0.995), 101 * kMicro);
}

TEST(LoadGeneratorTest, OpenLoopAboveCapacityCountsWhatItCouldNotSend) {
  // 1 ms per decision, 2 000 scheduled per second: only half can be sent, and latency from the
  // intended time grows through the run.
  FakeTicker ticker;
  FakeTarget target(ticker, 1 * kMilli);
  const LoadResult r = run_load(
      target,
      {.threads = 1, .duration_ns = 1 * kSecond, .mode = LoadMode::kOpen, .rate_per_thread = 2'000},
      ticker);
  EXPECT_EQ(r.decisions, 1'000u);
  EXPECT_EQ(r.unsent, 1'000u);
  EXPECT_GE(r.latency.max(), 499 * kMilli);
  EXPECT_EQ(r.service_time.max(), 1 * kMilli);
}

TEST(LoadGeneratorTest, ProgressIsReportedWhileRunning) {
  FakeTicker ticker;
  FakeTarget target(ticker, 1 * kMicro);
  std::atomic<int> reports{0};
  const LoadResult r = run_load(target,
                                {.threads = 1,
                                 .duration_ns = 10 * kMilli,
                                 .on_progress =
                                     [&](const Progress& p) {
                                       EXPECT_EQ(p.threads, 1);
                                       EXPECT_EQ(p.total_ns, 10 * kMilli);
                                       reports.fetch_add(1);
                                     },
                                 .progress_interval_ns = 1 * kMilli},
                                ticker);
  EXPECT_GE(reports.load(), 1);
  EXPECT_GT(r.decisions, 0u);
}

TEST(LoadGeneratorTest, FormatSubjectReusesItsBuffer) {
  std::string buffer;
  EXPECT_EQ(format_subject(buffer, "user:", 0), "user:0");
  EXPECT_EQ(format_subject(buffer, "user:", 18'446'744'073'709'551'615ULL),
            "user:18446744073709551615");
  EXPECT_EQ(format_subject(buffer, "", 42), "42");
}

}  // namespace
}  // namespace sluice::bench
