// Replay throughput (docs/benchmarks.md, "Back-testing replay (issue 36)"): events per second
// from the binary recording format and lines per second from JSON lines, over 100 000 subjects,
// plus the engine alone (events already in memory) to compare with the pure algorithm step, and
// what Recorder::record costs the thread that records.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "sluice/simulate/binary_format.h"
#include "sluice/simulate/recorder.h"
#include "sluice/simulate/replay.h"
#include "sluice/simulate/traffic_stream.h"

namespace sluice::simulate {
namespace {

constexpr Micros kEpoch = 1'700'000'000'000'000;
constexpr std::uint32_t kSubjects = 100'000;
constexpr std::size_t kEvents = 2'000'000;
constexpr std::size_t kJsonLines = 500'000;

// 20 requests per subject over 20 s, subjects uniformly at random, 10 µs apart: against the
// policies below about a fifth are denied, so both paths are timed.
std::vector<std::pair<Micros, std::uint32_t>> traffic(std::size_t count) {
  std::mt19937 random(36);
  std::vector<std::pair<Micros, std::uint32_t>> events;
  events.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    events.emplace_back(kEpoch + static_cast<Micros>(i) * 10,
                        static_cast<std::uint32_t>(random() % kSubjects));
  }
  return events;
}

std::string subject_name(std::uint32_t id) { return "user-" + std::to_string(id); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("sluice-replay-bench-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

const std::string& binary_file() {
  static const std::string path = [] {
    const std::string p = temp_path("traffic.sltr");
    StatusOr<BinaryWriter> writer = BinaryWriter::create(p);
    for (const auto& [time, subject] : traffic(kEvents)) {
      (void)writer->write(time, subject_name(subject), "", "", 1);
    }
    (void)writer->close();
    return p;
  }();
  return path;
}

const std::string& json_file() {
  static const std::string path = [] {
    const std::string p = temp_path("traffic.jsonl");
    std::ofstream out(p);
    for (const auto& [time, subject] : traffic(kJsonLines)) {
      out << R"({"time": )" << time << R"(, "key": ")" << subject_name(subject)
          << R"(", "app": "web", "cost": 1})" << '\n';
    }
    return p;
  }();
  return path;
}

policy::Policy policy_named(const std::string& name) {
  policy::Policy policy;
  policy.name = "api";
  policy.apps = {"*"};
  if (name == "gcra") {
    policy.limits = {algorithm::Gcra{.rate = 1, .period = kMicrosPerSecond, .burst = 1}};
  } else {
    policy.limits = {algorithm::FixedWindow{.limit = 1, .window = kMicrosPerSecond}};
  }
  return policy;
}

void replay_file(benchmark::State& state, const std::string& path, const std::string& algorithm) {
  std::uint64_t events = 0;
  std::uint64_t denied = 0;
  for (auto _ : state) {
    TrafficNames names;
    StatusOr<Replay> replay =
        Replay::create({{.label = algorithm, .policy = policy_named(algorithm)}}, names, {});
    StatusOr<TrafficSummary> summary =
        stream_traffic({path}, names, {}, [&replay](const Event& e) { replay->add(e); });
    if (!summary.ok()) state.SkipWithError(std::string(summary.status().message()).c_str());
    events += summary->events;
    denied += replay->variants()[0].denied();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(events));
  state.counters["denied"] =
      static_cast<double>(denied) / static_cast<double>(std::max<std::uint64_t>(events, 1));
}

void BM_ReplayBinary(benchmark::State& state, const std::string& algorithm) {
  replay_file(state, binary_file(), algorithm);
}
BENCHMARK_CAPTURE(BM_ReplayBinary, gcra, std::string("gcra"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayBinary, fixed_window, std::string("fixed_window"))
    ->Unit(benchmark::kMillisecond);

// The engine alone: events already decoded in memory, so the reader's cost is excluded.
void BM_ReplayEngine(benchmark::State& state, const std::string& algorithm) {
  const auto events = traffic(kEvents);
  std::uint64_t decided = 0;
  for (auto _ : state) {
    StatusOr<VariantReplay> replay =
        VariantReplay::create({.label = algorithm, .policy = policy_named(algorithm)}, {});
    for (const auto& [time, subject] : events) replay->decide(subject, 1, time);
    benchmark::DoNotOptimize(replay->denied());
    decided += events.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(decided));
}
BENCHMARK_CAPTURE(BM_ReplayEngine, gcra, std::string("gcra"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReplayEngine, fixed_window, std::string("fixed_window"))
    ->Unit(benchmark::kMillisecond);

// JSON lines read and decoded only (no replay): the reader's own rate.
void BM_JsonLinesRead(benchmark::State& state) {
  const std::string& path = json_file();  // written once, before the timing
  std::uint64_t lines = 0;
  for (auto _ : state) {
    TrafficNames names;
    StatusOr<TrafficSummary> summary =
        stream_traffic({path}, names, {}, [](const Event& e) { benchmark::DoNotOptimize(e); });
    if (!summary.ok()) state.SkipWithError(std::string(summary.status().message()).c_str());
    lines += summary->events;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(lines));
}
BENCHMARK(BM_JsonLinesRead)->Unit(benchmark::kMillisecond);

void BM_ReplayJsonLines(benchmark::State& state) { replay_file(state, json_file(), "gcra"); }
BENCHMARK(BM_ReplayJsonLines)->Unit(benchmark::kMillisecond);

// What recording costs the decision path: Recorder::record on the calling thread (sampling
// hash, the queue's lock, the copies), everything recorded, while the writer thread drains to
// a file. Records the writer could not keep up with are dropped and counted (`dropped`).
void BM_RecorderRecord(benchmark::State& state) {
  const std::string directory = temp_path("recordings");
  StatusOr<std::unique_ptr<Recorder>> recorder = Recorder::start({.directory = directory});
  if (!recorder.ok()) state.SkipWithError(std::string(recorder.status().message()).c_str());
  std::vector<std::string> subjects;
  for (std::uint32_t i = 0; i < 1024; ++i) subjects.push_back(subject_name(i * 97));
  std::size_t i = 0;
  Micros now = kEpoch;
  for (auto _ : state) {
    (*recorder)->record(++now, "api", "web", subjects[i++ & 1023], 1, RecordedOutcome::kAllowed);
  }
  (*recorder)->flush();
  const RecorderStats stats = (*recorder)->stats();
  state.SetItemsProcessed(state.iterations());
  state.counters["dropped"] = static_cast<double>(stats.dropped) /
                              static_cast<double>(std::max<std::uint64_t>(state.iterations(), 1));
  recorder->reset();
  std::filesystem::remove_all(directory);
}
BENCHMARK(BM_RecorderRecord);

// Removes the generated files when the process ends.
struct Cleanup {
  ~Cleanup() {
    std::filesystem::remove(temp_path("traffic.sltr"));
    std::filesystem::remove(temp_path("traffic.jsonl"));
  }
} cleanup;

}  // namespace
}  // namespace sluice::simulate
