// Micro-benchmarks of MemoryStore::acquire against a baseline, and of the memory an idle subject
// costs. Targets (docs/benchmarks.md): a decision at most 2x the baseline, and at most 128 bytes
// per idle single-timestamp subject beyond its subject bytes.
//
// Baseline: a mutex-protected std::unordered_map<std::string, int64_t> incremented over the same
// subjects with the same thread counts, registered in this binary so ratios come from one run.
//
// Cases, per policy: one hot subject, and 1 000 000 distinct subjects visited in a fixed random
// order, each with 1 and 2 threads. The store for the distinct cases is filled with all
// subjects (one request each) before timing, so they measure decisions on existing, cache-cold
// entries, not inserts; it is built once per policy and reused by that policy's cases.
//
// Clock: SystemClock, as in production. A ManualClock advanced per iteration would put one
// shared atomic read-modify-write in every iteration, a cache line the two threads fight over
// that the store never touches in production; the vDSO clock read it replaces is part of the real
// cost of a decision. Limits are per hour so no entry expires during a run (a run crossing the top
// of an hour expires every fixed_window entry at once, as production would). With this time
// base the hot subject is far above its limit (nearly every request denied: the abuser a limiter
// exists for) and the distinct subjects are far below theirs (nearly every request allowed);
// the "allowed" counter reports the fraction.
//
// Memory: filling a policy's store is also measured, as heap growth (mallinfo2) per subject;
// the idle_memory cases report it for a single gcra limit and for a two-limit policy.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/core/clock.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/time.h"

namespace sluice::store {
namespace {

using algorithm::FixedWindow;
using algorithm::Gcra;
using algorithm::Limit;
using algorithm::TokenBucket;

constexpr std::size_t kDistinctSubjects = 1'000'000;
constexpr std::string_view kHotSubject = "user:hot";

// "user:00000000" .. "user:00999999": 13 bytes, like a short user id or an IPv4 address.
const std::vector<std::string>& subjects() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> keys;
    keys.reserve(kDistinctSubjects);
    char buffer[32];
    for (std::size_t i = 0; i < kDistinctSubjects; ++i) {
      std::snprintf(buffer, sizeof(buffer), "user:%08zu", i);
      keys.emplace_back(buffer);
    }
    return keys;
  }();
  return all;
}

// The order the distinct cases visit subjects in: a fixed random permutation, so consecutive
// requests touch unrelated entries (as independent clients do) but every subject is visited
// once per pass.
const std::vector<std::uint32_t>& visit_order() {
  static const std::vector<std::uint32_t> order = [] {
    std::vector<std::uint32_t> indices(kDistinctSubjects);
    std::iota(indices.begin(), indices.end(), std::uint32_t{0});
    std::shuffle(indices.begin(), indices.end(), std::mt19937_64{42});
    return indices;
  }();
  return order;
}

// Walks visit_order() from a per-thread offset so two threads start on different subjects.
class DistinctCursor {
 public:
  explicit DistinctCursor(const benchmark::State& bench)
      : position_(kDistinctSubjects / static_cast<std::size_t>(bench.threads()) *
                  static_cast<std::size_t>(bench.thread_index())) {}
  const std::string& next() {
    const std::string& subject = subjects()[order_[position_]];
    if (++position_ == kDistinctSubjects) position_ = 0;
    return subject;
  }

 private:
  const std::vector<std::uint32_t>& order_ = visit_order();
  std::size_t position_;
};

enum class Keys { kHot, kDistinct };

// ---------------------------------------------------------------------------------------------
// Baseline

struct Baseline {
  std::mutex mutex;
  std::unordered_map<std::string, std::int64_t> counts;
};

Baseline& baseline() {
  static Baseline* const instance = [] {
    auto* created = new Baseline;
    created->counts.reserve(kDistinctSubjects + 1);
    for (const std::string& subject : subjects()) created->counts.emplace(subject, 0);
    created->counts.emplace(kHotSubject, 0);
    return created;
  }();
  return *instance;
}

void BM_Baseline(benchmark::State& bench, Keys keys) {
  Baseline& map = baseline();
  const std::string hot(kHotSubject);
  DistinctCursor cursor(bench);
  for (auto _ : bench) {
    const std::string& subject = keys == Keys::kHot ? hot : cursor.next();
    std::lock_guard lock(map.mutex);
    std::int64_t& count = ++map.counts[subject];
    benchmark::DoNotOptimize(count);
  }
  bench.SetItemsProcessed(bench.iterations());
}

// ---------------------------------------------------------------------------------------------
// MemoryStore::acquire

struct Policy {
  const char* name;
  std::vector<Limit> limits;
};

const Policy& policy_gcra() {
  static const Policy policy{
      "gcra", {Gcra{.rate = 100, .period = kMicrosPerHour, .burst = 99}}};  // 100/h, burst 100
  return policy;
}

const Policy& policy_token_bucket() {
  static const Policy policy{
      "token_bucket", {TokenBucket{.capacity = 100, .refill = 100, .period = kMicrosPerHour}}};
  return policy;
}

const Policy& policy_fixed_window() {
  static const Policy policy{"fixed_window",
                             {FixedWindow{.limit = 1'000, .window = kMicrosPerHour}}};
  return policy;
}

// The seeds' example: 10/s and 1 000/h.
const Policy& policy_two_limits() {
  static const Policy policy{"two_limits",
                             {Gcra{.rate = 10, .period = kMicrosPerSecond, .burst = 9},
                              FixedWindow{.limit = 1'000, .window = kMicrosPerHour}}};
  return policy;
}

MemoryStoreOptions store_options() {
  // Room for every subject with margin, so no fill ever meets the bound.
  return {.max_keys = 2 * kDistinctSubjects, .shards = 64};
}

// Bytes the allocator hands out: arena chunks plus mmapped blocks (a shard's bucket array can be
// large enough to be mmapped, and uordblks alone would miss it).
std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// A store holding every subject of one policy (one allowed request each), and what filling it
// cost the heap: allocator chunk headers and the shards' bucket arrays included.
struct FilledStore {
  const Policy* policy = nullptr;
  std::unique_ptr<MemoryStore> store;
  double bytes_per_key = 0;
  double subject_bytes = 0;    // mean subject length
  double fill_ns_per_key = 0;  // wall time of the fill per subject: an insert, allocation included
  std::size_t keys = 0;        // subjects held after the fill (all of them unless refused)
};

// The filled store of `policy`. One policy's store at a time: asking for another frees the
// previous one first. Thread-safe; the first caller fills it (about a second).
FilledStore& filled_store(const Policy& policy) {
  static std::mutex mutex;
  static FilledStore filled;
  std::lock_guard lock(mutex);
  if (filled.policy != &policy) {
    filled.policy = nullptr;
    filled.store.reset();
    filled.store = std::make_unique<MemoryStore>(SystemClock::instance(), store_options());
    const std::vector<std::string>& keys = subjects();  // built outside the measured growth
    const std::size_t before = heap_in_use();
    const auto start = std::chrono::steady_clock::now();
    std::size_t subject_bytes = 0;
    for (const std::string& subject : keys) {
      const SubjectRef ref{.policy = policy.name, .limits = policy.limits, .subject = subject};
      benchmark::DoNotOptimize(filled.store->acquire(ref, 1));
      subject_bytes += subject.size();
    }
    const std::chrono::duration<double, std::nano> elapsed =
        std::chrono::steady_clock::now() - start;
    const std::size_t after = heap_in_use();
    const auto count = static_cast<double>(keys.size());
    filled.bytes_per_key = static_cast<double>(after - before) / count;
    filled.subject_bytes = static_cast<double>(subject_bytes) / count;
    filled.fill_ns_per_key = elapsed.count() / count;
    filled.keys = filled.store->stats().keys;
    filled.policy = &policy;
  }
  return filled;
}

// `policy` is a pointer: RegisterBenchmark copies its arguments, and filled_store() tells
// policies apart by address.
void BM_Acquire(benchmark::State& bench, const Policy* policy, Keys keys) {
  MemoryStore& store = *filled_store(*policy).store;
  DistinctCursor cursor(bench);
  SubjectRef ref{.policy = policy->name, .limits = policy->limits, .subject = kHotSubject};
  std::int64_t allowed = 0;
  for (auto _ : bench) {
    if (keys == Keys::kDistinct) ref.subject = cursor.next();
    StatusOr<Decision> decision = store.acquire(ref, 1);
    allowed += decision.ok() && decision->verdict.allowed ? 1 : 0;
    benchmark::DoNotOptimize(decision);
  }
  bench.SetItemsProcessed(bench.iterations());
  bench.counters["allowed"] =
      benchmark::Counter(static_cast<double>(allowed), benchmark::Counter::kAvgIterations);
}

// Registers the four cases in this order: distinct cases first, while the filled store's entries
// are freshest; threaded cases measure wall time (a thread waiting on a lock uses no CPU).
template <typename Function, typename... Args>
void register_cases(const std::string& prefix, Function function, const Args&... args) {
  const struct {
    const char* suffix;
    Keys keys;
    int threads;
  } cases[] = {{"/distinct_1M", Keys::kDistinct, 1},
               {"/distinct_1M", Keys::kDistinct, 2},
               {"/hot_key", Keys::kHot, 1},
               {"/hot_key", Keys::kHot, 2}};
  for (const auto& c : cases) {
    auto* bench =
        benchmark::RegisterBenchmark((prefix + c.suffix).c_str(), function, args..., c.keys);
    if (c.threads > 1) bench->Threads(c.threads)->UseRealTime();
  }
}

// ---------------------------------------------------------------------------------------------
// Memory per idle subject

// Reports the heap growth per subject of filling the policy's store with 1 000 000 subjects:
// bytes_per_key in total, overhead_per_key beyond the subject bytes. Deterministic (it does not
// depend on time), so the first run measures and later runs repeat the figure. The benchmark's
// own time is that of the fill only in the first run; fill_ns_per_key keeps it for every run.
void BM_IdleMemory(benchmark::State& bench, const Policy* policy) {
  for (auto _ : bench) {
    const FilledStore& filled = filled_store(*policy);
    if (filled.keys != subjects().size()) {
      bench.SkipWithError("the store dropped subjects while being filled");
      break;
    }
    bench.counters["bytes_per_key"] = filled.bytes_per_key;
    bench.counters["subject_bytes"] = filled.subject_bytes;
    bench.counters["overhead_per_key"] = filled.bytes_per_key - filled.subject_bytes;
    bench.counters["fill_ns_per_key"] = filled.fill_ns_per_key;
  }
}

[[maybe_unused]] const bool kRegistered = [] {
  register_cases("baseline/mutex_unordered_map", BM_Baseline);
  // Each policy costs a fill of about a second, so the list is kept to the single-timestamp
  // algorithms, the window counter and one two-limit policy (the others' pure step is measured in
  // algorithm_benchmark).
  for (const Policy* policy :
       {&policy_gcra(), &policy_token_bucket(), &policy_fixed_window(), &policy_two_limits()}) {
    const std::string name(policy->name);
    // First, so it times the fill that the acquire cases below then reuse.
    if (policy == &policy_gcra() || policy == &policy_two_limits()) {
      benchmark::RegisterBenchmark(("idle_memory/" + name).c_str(), BM_IdleMemory, policy)
          ->Iterations(1)
          ->Unit(benchmark::kMillisecond);
    }
    register_cases("acquire/" + name, BM_Acquire, policy);
  }
  return true;
}();

}  // namespace
}  // namespace sluice::store
