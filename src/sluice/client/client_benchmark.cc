// The library's blocking call on Redis, one caller: Client::try_acquire's latency with the lone
// caller's spin (ClientOptions::blocking_spin, the default 150 µs) and without it (0), in one run
// against one redis-server of its own (docs/benchmarks.md, "The library's blocking calls").
// Counters: p50_us and p99_us of the calls, and the calling process's CPU per call (cpu_us: what
// the spin costs).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sluice/client.h"
#include "testing/measure.h"
#include "testing/redis_server.h"

namespace sluice {
namespace {

constexpr char kPolicy[] = R"(name: bench.library
apps: ["*"]
limits:
  - {algorithm: gcra, rate: 1000000000, period: 1s, burst: 1000000000}
)";

// One redis-server for the whole run, started on first use; null when it cannot start.
test::RedisServer* redis() {
  static std::unique_ptr<test::RedisServer> server = [] {
    StatusOr<std::unique_ptr<test::RedisServer>> started = test::RedisServer::start();
    return started.ok() ? std::move(*started) : nullptr;
  }();
  return server.get();
}

void BM_LibraryBlockingAcquire(benchmark::State& state) {
  if (redis() == nullptr) {
    state.SkipWithError("cannot start redis-server");
    return;
  }
  StatusOr<Client> client =
      Client::open({.store = "redis://127.0.0.1:" + std::to_string(redis()->port()),
                    .app = "bench",
                    .policy_text = kPolicy,
                    .blocking_spin = std::chrono::microseconds(state.range(0))});
  if (!client.ok()) {
    state.SkipWithError(client.status().to_string().c_str());
    return;
  }
  // Connected and the script loaded before timing.
  for (int i = 0; i < 100; ++i) (void)client->try_acquire("bench.library", "warm-up");
  std::vector<double> took;
  took.reserve(static_cast<std::size_t>(state.max_iterations));
  std::uint64_t n = 0;
  const double cpu_before = test::cpu_us();
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    StatusOr<Decision> decision =
        client->try_acquire("bench.library", "user-" + std::to_string(n++ % 1000));
    took.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
    if (!decision.ok()) {
      state.SkipWithError(decision.status().to_string().c_str());
      return;
    }
  }
  const double cpu = test::cpu_us() - cpu_before;
  std::sort(took.begin(), took.end());
  state.counters["p50_us"] = test::sorted_percentile(took, 0.50);
  state.counters["p99_us"] = test::sorted_percentile(took, 0.99);
  state.counters["cpu_us"] = cpu / static_cast<double>(took.size());
}

BENCHMARK(BM_LibraryBlockingAcquire)->ArgName("spin_us")->Arg(0)->Arg(150)->UseRealTime();

}  // namespace
}  // namespace sluice
