// Throughput of the pipelining client against a real redis-server started for the run:
// blocking EVALSHA calls from 1, 10 and 100 threads sharing one client (2 connections), plus
// PING as the floor and an async window from one thread.
#include <benchmark/benchmark.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "sluice/store/redis/multiplexer.h"
#include "testing/redis_server.h"

namespace sluice::redis {
namespace {

std::unique_ptr<test::RedisServer> g_server;
std::unique_ptr<Multiplexer> g_client;

// A small script in the shape of the store's: one key, a read-modify-write, TTL, Redis's clock.
const Script& script() {
  static const Script kScript(R"lua(
local now = redis.call('TIME')
local count = redis.call('INCRBY', KEYS[1], ARGV[1])
if count == tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], 60000) end
return {count, tonumber(now[1])}
)lua");
  return kScript;
}

void BM_EvalSha(benchmark::State& state) {
  const std::string key = "bench:{evalsha}:" + std::to_string(state.thread_index());
  for (auto _ : state) {
    StatusOr<Reply> reply = g_client->eval_script(script(), {key}, {"1"});
    if (!reply.ok()) {
      state.SkipWithError(reply.status().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(reply);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvalSha)->Threads(1)->Threads(10)->Threads(100)->UseRealTime();

void BM_Ping(benchmark::State& state) {
  for (auto _ : state) {
    StatusOr<Reply> reply = g_client->command({"PING"});
    if (!reply.ok()) {
      state.SkipWithError(reply.status().to_string().c_str());
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ping)->Threads(1)->Threads(10)->Threads(100)->UseRealTime();

// One thread keeping `window` EVALSHAs in flight: what pipelining gives an async caller.
void BM_EvalShaAsyncWindow(benchmark::State& state) {
  const int window = static_cast<int>(state.range(0));
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0;
  std::atomic<bool> failed{false};
  for (auto _ : state) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return in_flight < window; });
      ++in_flight;
    }
    g_client->async_eval_script(script(), {"bench:{async}"}, {"1"},
                                [&](const StatusOr<Reply>& reply) {
                                  if (!reply.ok()) failed = true;
                                  std::lock_guard lock(mu);
                                  --in_flight;
                                  cv.notify_one();
                                });
  }
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (failed) state.SkipWithError("an async EVALSHA failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EvalShaAsyncWindow)->Arg(64)->Arg(1024)->UseRealTime();

}  // namespace
}  // namespace sluice::redis

int main(int argc, char** argv) {
  using namespace sluice;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
  if (!server.ok()) {
    std::fprintf(stderr, "redis-server: %s\n", server.status().to_string().c_str());
    return 1;
  }
  redis::g_server = std::move(*server);
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::create({.port = redis::g_server->port()});
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().to_string().c_str());
    return 1;
  }
  redis::g_client = std::move(*client);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const redis::ClientStats stats = redis::g_client->stats();
  std::fprintf(stderr, "client: %llu requests in %llu writes (%.1f per write), %llu reloads\n",
               static_cast<unsigned long long>(stats.requests),
               static_cast<unsigned long long>(stats.writes),
               stats.writes == 0
                   ? 0.0
                   : static_cast<double>(stats.requests) / static_cast<double>(stats.writes),
               static_cast<unsigned long long>(stats.script_reloads));
  redis::g_client.reset();
  redis::g_server.reset();
  return 0;
}
