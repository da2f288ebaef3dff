// The over-limit cache under abuse (docs/defences.md §1, bench/defences.sh): decisions/s and Redis
// calls per decision through the asynchronous pipeline (service::Limiter) over a real
// redis-server, cache on (arg 1) and off (arg 0), where 90 % of requests are denied: 9 of every
// 10 come from 7 abusive subjects long past their limit (10 per hour), 1 from a new subject that
// is allowed. `in_flight` decisions are kept outstanding, as a server's many connections would.
//
// And the circuit breaker during an outage (docs/defences.md §2): the same pipeline while
// redis-server is stopped (SIGSTOP, so calls hang until their deadline, here 50 ms), breaker off
// (arg 0) and on (arg 1, opening after 5 timeouts): decisions/s and mean latency.
#include <benchmark/benchmark.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/limiter.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"
#include "testing/counting_store.h"
#include "testing/redis_server.h"

namespace sluice::service {
namespace {

constexpr int kInFlight = 128;
constexpr int kBatch = 2'000;  // decisions per benchmark iteration

using test::CountingStore;

// One redis-server and store for the whole process, stopped (by PID) when it exits.
struct Redis {
  std::unique_ptr<test::RedisServer> server;
  std::unique_ptr<store::RedisStore> store;

  static Redis& instance() {
    static Redis redis = [] {
      Redis r;
      StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
      if (!server.ok()) std::abort();
      r.server = std::move(*server);
      StatusOr<std::unique_ptr<redis::Multiplexer>> client =
          redis::Multiplexer::create({.port = r.server->port(), .connections = 2});
      if (!client.ok()) std::abort();
      r.store = std::make_unique<store::RedisStore>(
          std::shared_ptr<redis::Multiplexer>(std::move(*client)));
      return r;
    }();
    return redis;
  }
  ~Redis() {
    store.reset();  // the client first, then the server it talks to
    server.reset();
  }
  Redis() = default;
  Redis(Redis&&) = default;
};

std::vector<policy::Policy> policies() {
  policy::ParsedPolicies parsed = policy::policies_from_text(R"([
    {"name": "abused", "apps": ["*"], "limits": [
       {"algorithm": "fixed_window", "limit": 10, "window": "1h"}]}])");
  if (!parsed.errors.empty()) std::abort();
  return parsed.policies;
}

void BM_AbusiveLoad(benchmark::State& state) {
  static std::atomic<int> run{0};
  const bool cache = state.range(0) == 1;
  Redis& redis = Redis::instance();
  CountingStore counting(*redis.store);
  StaticPolicyLookup lookup(policies());
  store::MemoryStore local(SystemClock::instance());
  Limiter limiter(counting, &local,
                  {.policies = &lookup, .over_limit_cache_entries = cache ? 100'000u : 0u});
  const std::string prefix = "run" + std::to_string(run.fetch_add(1)) + ":";

  std::mutex mutex;
  std::condition_variable changed;
  int in_flight = 0;
  std::int64_t denied = 0;
  std::int64_t decided = 0;
  std::int64_t next = 0;
  const auto on_answer = [&](const Decided& answer) {
    const StatusOr<Decision>& decision = answer.decision;
    std::lock_guard lock(mutex);
    --in_flight;
    ++decided;
    if (decision.ok() && !decision->verdict.allowed) ++denied;
    changed.notify_one();
  };
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i, ++next) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return in_flight < kInFlight; });
        ++in_flight;
      }
      std::string subject = next % 10 == 9 ? prefix + "new:" + std::to_string(next)
                                           : prefix + "abuser:" + std::to_string(next % 7);
      limiter.decide({.app = "bench", .policy = "abused", .subject = std::move(subject)},
                     on_answer);
    }
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return in_flight == 0; });
  }
  state.SetItemsProcessed(decided);
  state.counters["store_calls_per_decision"] =
      static_cast<double>(counting.calls.load()) / static_cast<double>(decided);
  state.counters["denied_share"] = static_cast<double>(denied) / static_cast<double>(decided);
  state.counters["cache_hits"] = static_cast<double>(limiter.metrics().defences().cache_hits());
}
BENCHMARK(BM_AbusiveLoad)->ArgName("cache")->Arg(0)->Arg(1)->UseRealTime();

void BM_StalledRedis(benchmark::State& state) {
  const bool breaker = state.range(0) == 1;
  Redis& redis = Redis::instance();
  StaticPolicyLookup lookup(policies());
  store::MemoryStore local(SystemClock::instance());
  Limiter limiter(*redis.store, &local,
                  {.store_timeout = 50 * kMicrosPerMilli,
                   .policies = &lookup,
                   .circuit_breaker = {.failure_threshold = breaker ? 5 : 0,
                                       .open_for = 3'600 * kMicrosPerSecond}});
  if (::kill(redis.server->pid(), SIGSTOP) != 0) std::abort();
  using Clock = std::chrono::steady_clock;
  std::mutex mutex;
  std::condition_variable changed;
  int in_flight = 0;
  std::int64_t decided = 0;
  std::int64_t degraded = 0;
  double latency_us = 0;
  std::int64_t next = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch / 10; ++i, ++next) {
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return in_flight < kInFlight; });
        ++in_flight;
      }
      limiter.decide({.app = "bench", .policy = "abused", .subject = std::to_string(next)},
                     [&, sent = Clock::now()](Decided answer) {
                       const StatusOr<Decision>& decision = answer.decision;
                       const double waited =
                           std::chrono::duration<double, std::micro>(Clock::now() - sent).count();
                       std::lock_guard lock(mutex);
                       --in_flight;
                       ++decided;
                       latency_us += waited;
                       if (decision.ok() && decision->degraded) ++degraded;
                       changed.notify_one();
                     });
    }
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return in_flight == 0; });
  }
  if (::kill(redis.server->pid(), SIGCONT) != 0) std::abort();
  state.SetItemsProcessed(decided);
  state.counters["mean_latency_us"] = latency_us / static_cast<double>(decided);
  state.counters["degraded_share"] = static_cast<double>(degraded) / static_cast<double>(decided);
}
BENCHMARK(BM_StalledRedis)->ArgName("breaker")->Arg(0)->Arg(1)->UseRealTime();

}  // namespace
}  // namespace sluice::service
