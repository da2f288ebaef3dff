// What one decision costs Redis through SLUICE.EVALUATE (sluice.so) beside the `evaluate` Lua
// script it mirrors (EVALSHA, the production script on Redis's TIME) and a plain INCR: for every
// algorithm, allowed and denied, one decision per call, and 16 per call (one request standing for
// 16 decisions: the store's batches) for gcra and token_bucket.
//
// Per row: N calls (SLUICE_BENCH_CALLS, default 2000) pipelined 50 at a time on keys written
// before the row starts (allowed: 1000 subjects under a generous limit; denied: the same under an
// exhausted one), and Redis's own CPU per decision from INFO commandstats. With
// SLUICE_BENCH_CALLGRIND=1 and bench/callgrind first on PATH (redis-server under callgrind), also
// the instructions Redis's main thread executed per decision (callgrind_control zeroes the
// counters before a row and reads them after): a figure load does not change.
// SLUICE_BENCH_RUNS=k repeats every row k times and keeps the worst (the highest count);
// SLUICE_BENCH_FILTER=text runs only the rows whose label contains it.
//
//   PATH="$PWD/bench/callgrind:$PATH" SLUICE_BENCH_CALLGRIND=1 SLUICE_BENCH_RUNS=3
//     build/release/src/sluice/redis_module/redis_module_benchmark      (one line)
//
// Under CTest (--benchmark_min_time=...) every row runs 20 calls: it only checks that all run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/limit.h"
#include "sluice/redis_module/module_test_support.h"
#include "sluice/store/redis/script_set.h"
#include "testing/measure.h"

namespace sluice::redis_module::test {
namespace {

using namespace algorithm;

constexpr Micros kSecond = kMicrosPerSecond;
constexpr Micros kHour = kMicrosPerHour;
constexpr int kSubjects = 1000;
constexpr int kPipeline = 50;

struct Row {
  const char* algorithm;
  Limit generous;  // never denies on the allow path
  Limit hot;       // denies once exhausted
  bool batches;    // also at 16 decisions per call
};

const std::vector<Row>& rows() {
  // The limits of redis_store_benchmark's script cost rows, so the scripts' figures here match
  // those in docs/benchmarks.md.
  static const std::vector<Row> kRows = {
      {"gcra", Gcra{.rate = 1'000'000, .period = kSecond, .burst = 1'000'000},
       Gcra{.rate = 1, .period = kHour, .burst = 9}, true},
      {"token_bucket", TokenBucket{.capacity = 1'000'000, .refill = 1'000'000, .period = kSecond},
       TokenBucket{.capacity = 10, .refill = 1, .period = kHour}, true},
      {"token_bucket_interval",
       TokenBucket{.capacity = 1'000'000,
                   .refill = 1'000'000,
                   .period = kSecond,
                   .refill_mode = RefillMode::kInterval},
       TokenBucket{
           .capacity = 10, .refill = 1, .period = kHour, .refill_mode = RefillMode::kInterval},
       false},
      {"leaky_bucket", LeakyBucket{.rate = 1'000'000, .period = kSecond, .max_delay = kSecond},
       LeakyBucket{.rate = 1, .period = kHour, .max_delay = 9 * kHour}, false},
      {"fixed_window", FixedWindow{.limit = 1'000'000'000, .window = kHour},
       FixedWindow{.limit = 10, .window = 3650 * kMicrosPerDay}, false},
      {"sliding_window", SlidingWindow{.limit = 1'000'000, .window = kHour},
       SlidingWindow{.limit = 10, .window = kMicrosPerDay}, false},
      {"sliding_log", SlidingLog{.limit = 10'000, .window = kSecond},
       SlidingLog{.limit = 10, .window = kHour}, false},
      {"concurrency", Concurrency{.limit = 100'000, .lease_ttl = kSecond},
       Concurrency{.limit = 10, .lease_ttl = kHour}, false},
  };
  return kRows;
}

int env_int(const char* name, int fallback) {
  const char* text = std::getenv(name);
  const int value = text == nullptr ? 0 : std::atoi(text);
  return value > 0 ? value : fallback;
}

bool callgrind() { return std::getenv("SLUICE_BENCH_CALLGRIND") != nullptr; }

std::string run_command(const std::string& command) {
  std::string output;
  if (FILE* pipe = ::popen((command + " 2>&1").c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    ::pclose(pipe);
  }
  return output;
}

// Instructions Redis's main thread ("Th 1") executed since the last zero; 0 without callgrind.
double read_instructions(int pid) {
  if (!callgrind()) return 0;
  return sluice::test::main_thread_instructions(
      run_command("callgrind_control -e Ir " + std::to_string(pid)));
}

// µs Redis spent in `command` since CONFIG RESETSTAT (INFO commandstats).
double command_usec(Connection& connection, const std::string& command) {
  const std::string info = connection.command({"INFO", "commandstats"}).text;
  const std::string tag = "cmdstat_" + command + ":";
  const std::size_t at = info.find(tag);
  if (at == std::string::npos) return 0;
  const std::size_t usec = info.find("usec=", at);
  return usec == std::string::npos ? 0 : std::atof(info.c_str() + usec + 5);
}

struct Measure {
  double instructions = 0;  // per decision
  double usec = 0;          // Redis CPU per decision, in the command
};

class Bench {
 public:
  Bench(std::unique_ptr<sluice::test::RedisServer> server, std::unique_ptr<Connection> connection,
        int calls)
      : server_(std::move(server)), connection_(std::move(connection)), calls_(calls) {
    const store::ScriptSet scripts(/*pinned_time=*/false);
    sha_ = connection_
               ->command({"SCRIPT", "LOAD", scripts.get(store::ScriptOperation::kAcquire).source()})
               .text;
  }

  // One call deciding `batch` subjects from `first` on under `limit`, each for `cost`.
  std::vector<std::string> call(bool module, const Limit& limit, int first, int batch,
                                std::int64_t cost) {
    std::string request = store::decision_request(store::ScriptOperation::kAcquire,
                                                  std::span(&limit, 1), cost, 0, lease());
    store::set_request_repeats(request, static_cast<std::size_t>(batch));
    std::vector<std::string> args;
    if (module) {
      args = {"SLUICE.EVALUATE"};
    } else {
      args = {"EVALSHA", sha_};
    }
    args.push_back(std::to_string(batch));
    for (int i = 0; i < batch; ++i) {
      args.push_back("bench:{" + std::to_string((first + i) % kSubjects) + "}:0");
    }
    args.push_back(std::move(request));
    return args;
  }

  Measure row(bool module, const Limit& limit, int batch, bool lease, bool allowed) {
    lease_ = lease;
    connection_->command({"FLUSHALL"});
    // Every subject written first, the hot limits exhausted by one request of their whole size:
    // the row measures decisions of cost 1 on existing keys, as a busy limiter makes them.
    send(module, limit, kSubjects / batch + 1, batch, allowed ? 1 : nominal_size(limit));
    connection_->command({"CONFIG", "RESETSTAT"});
    if (callgrind()) run_command("callgrind_control --zero " + std::to_string(server_->pid()));
    send(module, limit, calls_, batch, 1);
    const double instructions = read_instructions(server_->pid());
    const double decisions = static_cast<double>(calls_) * batch;
    const double usec = command_usec(*connection_, module ? "sluice.evaluate" : "evalsha");
    return {.instructions = instructions / decisions, .usec = usec / decisions};
  }

  Measure incr() {
    connection_->command({"FLUSHALL"});
    connection_->command({"CONFIG", "RESETSTAT"});
    if (callgrind()) run_command("callgrind_control --zero " + std::to_string(server_->pid()));
    for (int sent = 0; sent < calls_; sent += kPipeline) {
      std::vector<std::vector<std::string>> commands;
      for (int i = sent; i < std::min(calls_, sent + kPipeline); ++i) {
        commands.push_back({"INCR", "bench:{" + std::to_string(i % kSubjects) + "}:0"});
      }
      connection_->pipeline(commands);
    }
    const double instructions = read_instructions(server_->pid());
    return {.instructions = instructions / calls_,
            .usec = command_usec(*connection_, "incr") / calls_};
  }

 private:
  std::string lease() { return lease_ ? "lease-" + std::to_string(++leases_) : std::string(); }

  void send(bool module, const Limit& limit, int calls, int batch, std::int64_t cost) {
    for (int sent = 0; sent < calls; sent += kPipeline) {
      std::vector<std::vector<std::string>> commands;
      for (int i = sent; i < std::min(calls, sent + kPipeline); ++i) {
        commands.push_back(call(module, limit, i * batch, batch, cost));
      }
      for (const Reply& reply : connection_->pipeline(commands)) {
        if (reply.is_error()) {
          std::fprintf(stderr, "error: %s\n", reply.text.c_str());
          std::exit(1);
        }
      }
    }
  }

  std::unique_ptr<sluice::test::RedisServer> server_;
  std::unique_ptr<Connection> connection_;
  int calls_;
  std::string sha_;
  bool lease_ = false;
  long long leases_ = 0;
};

}  // namespace
}  // namespace sluice::redis_module::test

int main(int argc, char** argv) {
  using namespace sluice::redis_module::test;
  bool brief = false;
  for (int i = 1; i < argc; ++i) brief |= std::strncmp(argv[i], "--benchmark_min_time", 20) == 0;
  const int calls = brief ? 20 : env_int("SLUICE_BENCH_CALLS", 2000);
  const int runs = brief ? 1 : env_int("SLUICE_BENCH_RUNS", 1);
  auto server = start_redis_with_module(/*pinned_clock=*/false, {"--maxmemory", "0"});
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().to_string().c_str());
    return 1;
  }
  auto connection = Connection::open((*server)->port());
  if (!connection.ok()) {
    std::fprintf(stderr, "%s\n", connection.status().to_string().c_str());
    return 1;
  }
  Bench bench(std::move(*server), std::move(*connection), calls);
  // label -> worst of the runs, script and module.
  std::map<std::string, std::pair<Measure, Measure>> worst;
  Measure incr;
  const auto keep = [](Measure& kept, const Measure& measured) {
    kept.instructions = std::max(kept.instructions, measured.instructions);
    kept.usec = std::max(kept.usec, measured.usec);
  };
  std::vector<std::string> order;
  for (int run = 0; run < runs; ++run) {
    keep(incr, bench.incr());
    for (const Row& row : rows()) {
      const bool lease = std::holds_alternative<sluice::algorithm::Concurrency>(row.generous);
      for (const int batch : row.batches ? std::vector<int>{1, 16} : std::vector<int>{1}) {
        for (const bool allowed : {true, false}) {
          const sluice::algorithm::Limit& limit = allowed ? row.generous : row.hot;
          const std::string label = std::string(row.algorithm) + (allowed ? "/allow" : "/deny") +
                                    " x" + std::to_string(batch);
          const char* filter = std::getenv("SLUICE_BENCH_FILTER");
          if (filter != nullptr && label.find(filter) == std::string::npos) continue;
          if (run == 0) order.push_back(label);
          auto& [script, module] = worst[label];
          keep(script, bench.row(false, limit, batch, lease, allowed));
          keep(module, bench.row(true, limit, batch, lease, allowed));
        }
      }
    }
  }
  std::printf(
      "Redis per decision, worst of %d run(s) of %d calls; ir = instructions of Redis's "
      "main thread (callgrind), us = INFO commandstats usec\n",
      runs, calls);
  std::printf("%-30s %10s %10s %8s %8s %9s %9s %8s\n", "row", "script_ir", "module_ir", "x lua",
              "x INCR", "script_us", "module_us", "x lua");
  std::printf("%-30s %10.0f %10s %8s %8s %9.3f %9s %8s\n", "INCR", incr.instructions, "-", "-",
              "1.00", incr.usec, "-", "-");
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  for (const std::string& label : order) {
    const auto& [script, module] = worst[label];
    std::printf("%-30s %10.0f %10.0f %8.3f %8.2f %9.3f %9.3f %8.3f\n", label.c_str(),
                script.instructions, module.instructions,
                ratio(module.instructions, script.instructions),
                ratio(module.instructions, incr.instructions), script.usec, module.usec,
                ratio(module.usec, script.usec));
  }
  return 0;
}
