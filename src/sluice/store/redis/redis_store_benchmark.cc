// Benchmarks of the Redis store against a real redis-server started for the run
// (docs/benchmarks.md, "Redis store"; bench/redis_store.sh runs them with the recorded settings).
//
// 1. Script cost: redis-server CPU per decision for every algorithm, on the allow path (random
//    subjects) and the deny path (one exhausted hot subject), measured from /proc/<pid>/stat
//    (utime + stime, 10 ms ticks) and /proc/<pid>/schedstat (main thread, ns) over a run that
//    keeps Redis saturated with pipelined async calls. INCR and a plain GCRA script run in the
//    same process through the same driver as the yardsticks.
// 2. Multiplexer overhead: decisions/s and p50/p99 of RedisStore::acquire from 1, 10 and 100
// threads,
//    next to redis-benchmark sending EVALSHA of the very same script and arguments.
// 3. Memory: MEMORY USAGE of one key per algorithm, and used_memory per subject over 20 000.
//
// A summary table (ratios computed within this run) is printed to stderr at the end. Under
// CTest's --benchmark_min_time=0.01 every part shrinks to a smoke run.
//
// SLUICE_BENCH_CALLGRIND=1, with bench/callgrind (Redis under valgrind's callgrind) first on
// PATH: every script cost row also counts the instructions Redis executed per call
// (callgrind_control zeroes its counters before the row and reads them after), a figure that,
// unlike CPU time, load does not change.
#include <benchmark/benchmark.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/core/key.h"
#include "sluice/store/redis/redis_store.h"
#include "sluice/store/redis/script_set.h"
#include "testing/measure.h"
#include "testing/redis_server.h"

namespace sluice::store {
namespace {

using algorithm::Limit;
using SteadyClock = std::chrono::steady_clock;

std::unique_ptr<test::RedisServer> g_server;
std::shared_ptr<redis::Multiplexer> g_client;
std::unique_ptr<RedisStore> g_store;
std::unique_ptr<RedisStore> g_unbatched_store;  // max_batch 1: one script call per decision
double g_min_time = 0.5;  // seconds, from --benchmark_min_time; scales the fixed-length parts

bool smoke_run() { return g_min_time < 0.1; }

// ---- Redis process counters ---------------------------------------------------------------------

struct RedisCpu {
  double stat_us = 0;   // utime + stime of the whole process, µs (10 ms resolution)
  double sched_us = 0;  // time on CPU of the main thread (which runs every command), µs
};

RedisCpu redis_cpu() {
  RedisCpu cpu;
  const std::string pid = std::to_string(g_server->pid());
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state; utime is 14, stime 15
    if (i == 14) utime = std::stod(field);
    if (i == 15) {
      stime = std::stod(field);
      break;
    }
  }
  cpu.stat_us = (utime + stime) * 1e6 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  std::ifstream sched("/proc/" + pid + "/schedstat");
  double ns = 0;
  sched >> ns;
  cpu.sched_us = ns / 1e3;
  return cpu;
}

// Under SLUICE_BENCH_CALLGRIND: zeroes redis-server's callgrind counters; redis_instructions()
// then gives the instructions its main thread executed since (0 when not asked for).
bool callgrind_asked() {
  static const bool asked = std::getenv("SLUICE_BENCH_CALLGRIND") != nullptr;
  return asked;
}

std::string callgrind_control(const std::string& flags) {
  const std::string command =
      "callgrind_control " + flags + " " + std::to_string(g_server->pid()) + " 2>&1";
  std::string output;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
    ::pclose(pipe);
  }
  return output;
}

void zero_redis_instructions() {
  if (callgrind_asked()) callgrind_control("--zero");
}

double redis_instructions() {
  if (!callgrind_asked()) return 0;
  return test::main_thread_instructions(callgrind_control("-e Ir"));
}

// Microseconds Redis spent executing `command` itself (INFO commandstats), excluding reading and
// writing sockets.
double command_usec(const std::string& command) {
  StatusOr<redis::Reply> info = g_client->command({"INFO", "commandstats"});
  if (!info.ok()) return 0;
  const std::string& text = info->as_string();
  const std::string tag = "cmdstat_" + command + ":";
  const std::size_t at = text.find(tag);
  if (at == std::string::npos) return 0;
  const std::size_t usec = text.find("usec=", at);
  return usec == std::string::npos ? 0 : std::stod(text.substr(usec + 5));
}

double command_calls(const std::string& command) {
  StatusOr<redis::Reply> info = g_client->command({"INFO", "commandstats"});
  if (!info.ok()) return 0;
  const std::string& text = info->as_string();
  const std::size_t at = text.find("cmdstat_" + command + ":calls=");
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + command.size() + 15));
}

// ---- results gathered for the summary
// ------------------------------------------------------------

struct CostResult {
  double stat_us = 0;
  double sched_us = 0;
  double exec_us = 0;
  double per_second = 0;
  double instructions = 0;  // per decision, under SLUICE_BENCH_CALLGRIND only
};
std::mutex g_results_mu;
// "gcra/allow" -> one result per run of that benchmark (--benchmark_repetitions); the summary
// shows each column's median, so interleaved repetitions (--benchmark_enable_random_interleaving)
// give ratios that one noisy run cannot skew.
std::map<std::string, std::vector<CostResult>> g_costs;
std::map<std::string, std::map<std::string, double>> g_client_rows;

// ---- 1. script cost ---------------------------------------------------------------------------

// Script calls per run of every cost benchmark. Fixed, rather than Google Benchmark's own
// estimate: each run is then one measured run (the estimate's trial runs would be results too),
// and every row leaves a keyspace of the same size. SLUICE_BENCH_COST_CALLS overrides it: the
// brief run in the test command (src/sluice/store/CMakeLists.txt) only checks that every row runs.
int cost_calls() {
  const char* text = std::getenv("SLUICE_BENCH_COST_CALLS");
  const int calls = text == nullptr ? 0 : std::atoi(text);
  return calls > 0 ? calls : 50'000;
}
const int kCostCalls = cost_calls();

struct Algorithm {
  const char* name;
  Limit generous;  // never denies on the allow path
  Limit hot;       // exhausted after a few calls: the deny path
};

const std::vector<Algorithm>& algorithms() {
  using namespace algorithm;
  static const std::vector<Algorithm> kAll = {
      {"token_bucket", TokenBucket{.capacity = 1'000'000, .refill = 1'000'000, .period = 1'000'000},
       TokenBucket{.capacity = 10, .refill = 1, .period = kMicrosPerHour}},
      {"token_bucket_interval",
       TokenBucket{.capacity = 1'000'000,
                   .refill = 1'000'000,
                   .period = 1'000'000,
                   .refill_mode = RefillMode::kInterval},
       TokenBucket{.capacity = 10,
                   .refill = 1,
                   .period = kMicrosPerHour,
                   .refill_mode = RefillMode::kInterval}},
      {"gcra", Gcra{.rate = 1'000'000, .period = 1'000'000, .burst = 1'000'000},
       Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 9}},
      {"leaky_bucket", LeakyBucket{.rate = 1'000'000, .period = 1'000'000, .max_delay = 1'000'000},
       LeakyBucket{.rate = 1, .period = kMicrosPerHour, .max_delay = 9 * kMicrosPerHour}},
      {"fixed_window", FixedWindow{.limit = 1'000'000'000, .window = kMicrosPerHour},
       FixedWindow{.limit = 10, .window = 3650 * kMicrosPerDay}},
      {"sliding_window", SlidingWindow{.limit = 1'000'000, .window = kMicrosPerHour},
       SlidingWindow{.limit = 10, .window = kMicrosPerDay}},
      // A hot log or lease set holds `limit` entries: the deny path reads them (see the note in
      // docs/benchmarks.md).
      {"sliding_log", SlidingLog{.limit = 10'000, .window = kMicrosPerSecond},
       SlidingLog{.limit = 10, .window = kMicrosPerHour}},
      {"sliding_log_100", SlidingLog{.limit = 10'000, .window = kMicrosPerSecond},
       SlidingLog{.limit = 100, .window = kMicrosPerHour}},
      {"concurrency", Concurrency{.limit = 100'000, .lease_ttl = kMicrosPerSecond},
       Concurrency{.limit = 10, .lease_ttl = kMicrosPerHour}},
      {"concurrency_100", Concurrency{.limit = 100'000, .lease_ttl = kMicrosPerSecond},
       Concurrency{.limit = 100, .lease_ttl = kMicrosPerHour}},
  };
  return kAll;
}

// A plain, one-shot GCRA script as a yardstick for what a straightforward implementation costs
// (float TAT in µs, one GET, one SET PX). Not what Sluice runs.
const redis::Script& plain_gcra() {
  static const redis::Script kScript(R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst_offset = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local new_tat = tat + interval
local allow_at = new_tat - burst_offset
if allow_at > now then
  return {0, 0, math.ceil(allow_at - now)}
end
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
return {1, math.floor((now - allow_at) / interval), 0}
)lua");
  return kScript;
}

// Keeps `window` requests in flight from one thread; `submit(i, done)` sends request i.
class Pipeline {
 public:
  explicit Pipeline(int window) : window_(window) {}

  template <typename Submit>
  void send(Submit&& submit, std::uint64_t i) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return in_flight_ < window_; });
      ++in_flight_;
    }
    submit(i, [this](StatusOr<redis::Reply> reply) {
      if (!reply.ok() || reply->is_error()) failed_ = true;
      std::lock_guard lock(mu_);
      --in_flight_;
      cv_.notify_one();
    });
  }

  // Waits for every request; false if any failed.
  bool drain() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return in_flight_ == 0; });
    return !failed_.load();
  }

 private:
  int window_;
  std::mutex mu_;
  std::condition_variable cv_;
  int in_flight_ = 0;
  std::atomic<bool> failed_{false};
};

constexpr int kWindow = 256;
constexpr std::uint64_t kSubjects = 100'000;

std::string subject_of(std::uint64_t n) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "%012llu", static_cast<unsigned long long>(n));
  return buffer;
}

// The exact command RedisStore::acquire sends for (policy, limits, subject, cost), captured from
// Redis's SLOWLOG (threshold 0 for one call), so the benchmarks replay what the store really
// sends without knowing the scripts' calling convention. `key` is the position of the subject's
// key in `args` and `lease` that of the argument ending in the lease id, to substitute per call.
struct CapturedCall {
  std::vector<std::string> args;  // EVALSHA <sha> <numkeys> <key> ... as sent
  std::size_t key = 0;
  std::optional<std::size_t> lease;
  std::size_t lease_size = 0;
  std::string command;  // "evalsha", "fcall", ... for INFO commandstats

  // The arguments for another subject (and, when there is a lease, a fresh lease id).
  std::vector<std::string> for_subject(std::string subject_key) const {
    std::vector<std::string> out = args;
    out[key] = std::move(subject_key);
    if (lease) out[*lease].replace(out[*lease].size() - lease_size, lease_size, new_unique_id());
    return out;
  }
};

CapturedCall capture_acquire(const std::string& policy, const std::vector<Limit>& limits,
                             const std::string& subject, std::int64_t cost) {
  CapturedCall call;
  (void)store::acquire_now(*g_store, {policy, limits, subject},
                           0);  // the script is cached from here on
  (void)g_client->command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
  (void)g_client->command({"SLOWLOG", "RESET"});
  const StatusOr<Decision> decision = store::acquire_now(*g_store, {policy, limits, subject}, cost);
  const StatusOr<redis::Reply> log = g_client->command({"SLOWLOG", "GET", "20"});
  (void)g_client->command({"CONFIG", "SET", "slowlog-log-slower-than", "10000"});
  const std::string key = redis_limit_key(policy, subject, 0);
  if (!decision.ok() || !log.ok()) return call;
  for (const redis::Reply& entry : log->elements()) {  // newest first
    if (entry.elements().size() < 4) continue;
    std::vector<std::string> args;
    for (const redis::Reply& arg : entry.elements()[3].elements()) args.push_back(arg.as_string());
    const auto at = std::find(args.begin(), args.end(), key);
    if (args.empty() || at == args.end()) continue;
    call.args = std::move(args);
    call.key = static_cast<std::size_t>(at - call.args.begin());
    if (decision->lease) {
      const std::string& id = *decision->lease;
      const auto lease = std::find_if(call.args.begin(), call.args.end(), [&](const auto& arg) {
        return arg.size() >= id.size() && arg.compare(arg.size() - id.size(), id.size(), id) == 0;
      });
      if (lease != call.args.end()) {
        call.lease = static_cast<std::size_t>(lease - call.args.begin());
        call.lease_size = id.size();
      }
    }
    call.command = call.args[0];
    std::transform(call.command.begin(), call.command.end(), call.command.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    break;
  }
  return call;
}

// Every cost benchmark starts from an empty keyspace: otherwise what the benchmarks before it left
// decides when Redis grows (rehashes) its key tables, which slows whichever benchmark it falls in
// (a charge measured 5.1 µs in one run and 8.9 µs in the next).
void empty_keyspace() { (void)g_client->command({"FLUSHALL"}); }

// Runs the loop with one request per iteration, pipelined, and reports Redis's CPU per decision
// (`decisions` per request).
template <typename Submit>
void measure_redis_cost(benchmark::State& state, const std::string& label,
                        const std::string& command, Submit&& submit, int decisions = 1) {
  Pipeline pipeline(kWindow);
  const double calls_before = command_calls(command);
  const double usec_before = command_usec(command);
  const RedisCpu before = redis_cpu();
  zero_redis_instructions();
  const auto start = SteadyClock::now();
  std::uint64_t i = 0;
  for (auto _ : state) pipeline.send(submit, i++);
  if (!pipeline.drain()) state.SkipWithError("a request failed");
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const double instructions = redis_instructions();
  const RedisCpu after = redis_cpu();
  const double calls = command_calls(command) - calls_before;
  const double n = static_cast<double>(i) * decisions;
  CostResult result{
      .stat_us = (after.stat_us - before.stat_us) / n,
      .sched_us = (after.sched_us - before.sched_us) / n,
      .exec_us = calls > 0 ? (command_usec(command) - usec_before) / calls / decisions : 0,
      .per_second = n / seconds,
      .instructions = instructions / n};
  state.counters["redis_cpu_us"] = result.stat_us;
  if (callgrind_asked()) state.counters["redis_instructions"] = result.instructions;
  state.counters["redis_main_thread_us"] = result.sched_us;
  state.counters["exec_us"] = result.exec_us;
  state.counters["per_second"] = result.per_second;
  std::lock_guard lock(g_results_mu);
  g_costs[label].push_back(result);
}

void BM_ScriptCost(benchmark::State& state) {
  empty_keyspace();
  const Algorithm& a = algorithms()[static_cast<std::size_t>(state.range(0))];
  const bool deny = state.range(1) == 1;
  const std::vector<Limit> limits = {deny ? a.hot : a.generous};
  const std::string policy = std::string("bench.") + a.name;
  if (deny) {  // exhaust the hot subject first; every measured call is then denied
    for (int k = 0; k < 100; ++k) (void)store::acquire_now(*g_store, {policy, limits, "hot"}, 1);
    if (store::acquire_now(*g_store, {policy, limits, "hot"}, 1)->verdict.allowed) {
      state.SkipWithError("the hot subject is not exhausted");
      return;
    }
  }
  const CapturedCall call = capture_acquire(policy, limits, deny ? "hot" : subject_of(0), 1);
  if (call.args.empty()) {
    state.SkipWithError("could not capture the store's command");
    return;
  }
  // A batch of `batch` decisions, as the store sends those that wait at the same time: the
  // captured call's keys once per decision, then its request once, repeated (script_set.h).
  const int batch = static_cast<int>(state.range(2));
  const std::size_t numkeys = std::stoul(call.args[2]);
  std::string request = call.args.at(3 + numkeys);
  set_request_repeats(request, static_cast<std::size_t>(batch));
  std::mt19937_64 random(42);
  const auto batch_args = [&] {
    std::vector<std::string> keys;
    for (int d = 0; d < batch; ++d) {
      const std::vector<std::string> one =
          deny ? call.args
               : call.for_subject(redis_limit_key(policy, subject_of(random() % kSubjects), 0));
      keys.insert(keys.end(), one.begin() + 3,
                  one.begin() + 3 + static_cast<std::ptrdiff_t>(numkeys));
    }
    std::vector<std::string> args = {call.args[0], call.args[1], std::to_string(keys.size())};
    args.insert(args.end(), keys.begin(), keys.end());
    args.push_back(request);
    return args;
  };
  const std::string label = std::string(a.name) + (deny ? "/deny" : "/allow") +
                            (batch > 1 ? "/batch" + std::to_string(batch) : "");
  measure_redis_cost(
      state, label, call.command,
      [&](std::uint64_t, redis::Callback done) {
        g_client->async_command(batch_args(), std::move(done));
      },
      batch);
}

void BM_IncrCost(benchmark::State& state) {
  empty_keyspace();
  std::mt19937_64 random(42);
  measure_redis_cost(state, "INCR/allow", "incr", [&](std::uint64_t, redis::Callback done) {
    g_client->async_command({"INCR", "bench:incr:" + subject_of(random() % kSubjects)},
                            std::move(done));
  });
}

// A plain GCRA script at 1 M/s with a burst of 1 M (allow) or 1 per hour after 10 (deny).
void BM_PlainGcraCost(benchmark::State& state) {
  empty_keyspace();
  const bool deny = state.range(0) == 1;
  const std::vector<std::string> args =
      deny ? std::vector<std::string>{std::to_string(kMicrosPerHour), "9"}
           : std::vector<std::string>{"1", "1000000"};
  if (deny) {
    for (int k = 0; k < 20; ++k)
      (void)g_client->eval_script(plain_gcra(), {"bench:plain:hot"}, args);
  }
  std::mt19937_64 random(42);
  measure_redis_cost(state, std::string("plain_gcra") + (deny ? "/deny" : "/allow"), "evalsha",
                     [&](std::uint64_t, redis::Callback done) {
                       const std::string key =
                           deny ? "bench:plain:hot"
                                : "bench:plain:" + subject_of(random() % kSubjects);
                       g_client->async_eval_script(plain_gcra(), {key}, args, std::move(done));
                     });
}

// Issue 19: what a quota operation costs Redis, next to an acquire of the same algorithm
// (BM_ScriptCost/<algorithm>/0/1) in the same run: a charge or refund of 1, a reserve of 2 (one
// hour), and a settle of such a reservation with an actual cost of 1 or 3 (half refund the excess,
// half charge the overrun). Random subjects, one operation per call. A settle needs a reservation
// per iteration, made before the timed loop (kCostCalls of them).
//
// A settle finds its subject's state present, and 50 000 reservation keys beside it; the acquire
// row, on an empty keyspace, mostly creates its state. `acquire_reserved` is the like-for-like
// baseline: the same reservations made first, then an acquire of 1 on each settle's subject, in
// the settles' order, one decision per script call as BM_ScriptCost sends it (not batched).
enum QuotaCase : std::int64_t {
  kChargeCase,
  kRefundCase,
  kReserveCase,
  kSettleCase,
  kAcquireReservedCase
};

void BM_QuotaCost(benchmark::State& state) {
  empty_keyspace();
  const Algorithm& a = algorithms()[static_cast<std::size_t>(state.range(0))];
  const auto which = static_cast<QuotaCase>(state.range(1));
  const std::vector<Limit> limits = {a.generous};
  const std::string policy = std::string("bench.quota.") + a.name;
  static constexpr const char* kNames[] = {"/charge", "/refund", "/reserve", "/settle",
                                           "/acquire_reserved"};
  // Caches quota.lua in Redis first. Otherwise the timed loop's first window of calls all come back
  // NOSCRIPT and go again as EVAL with the script's source, which Redis hashes each time: the
  // first quota row of a run counted 1.9× the instructions of its steady state so.
  (void)store::apply_quota_now(*g_store, {policy, limits, "script-cache"},
                               {.operation = QuotaOperation::kRefund, .cost = 1});
  std::mt19937_64 random(42);
  std::vector<std::string> subjects;
  const auto reservation_of = [](std::uint64_t i) { return "r" + std::to_string(i); };
  if (which == kSettleCase || which == kAcquireReservedCase) {
    for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(kCostCalls); ++i) {
      subjects.push_back(subject_of(random() % kSubjects));
      const std::string id = reservation_of(i);
      const StatusOr<Decision> reserved =
          store::apply_quota_now(*g_store, {policy, limits, subjects.back()},
                                 {.operation = QuotaOperation::kReserve,
                                  .cost = 2,
                                  .reservation = id,
                                  .reservation_ttl = kMicrosPerHour});
      if (!reserved.ok() || !reserved->verdict.allowed) {
        state.SkipWithError("could not reserve");
        return;
      }
    }
  }
  CapturedCall acquire;
  if (which == kAcquireReservedCase) {
    acquire = capture_acquire(policy, limits, "capture", 1);
    if (acquire.args.empty()) {
      state.SkipWithError("could not capture the store's command");
      return;
    }
  }
  measure_redis_cost(
      state, std::string(a.name) + kNames[which], "evalsha",
      [&](std::uint64_t i, redis::Callback done) {
        QuotaRequest request{.cost = 1};
        std::string id;
        std::string subject;
        switch (which) {
          case kChargeCase:
            request.operation = QuotaOperation::kCharge;
            break;
          case kRefundCase:
            request.operation = QuotaOperation::kRefund;
            break;
          case kReserveCase:
            id = reservation_of(i);
            request = {.operation = QuotaOperation::kReserve,
                       .cost = 2,
                       .reservation = id,
                       .reservation_ttl = kMicrosPerHour};
            break;
          case kSettleCase:
            id = reservation_of(i);
            subject = subjects[i];
            request = {.operation = QuotaOperation::kSettle,
                       .cost = i % 2 == 0 ? 1 : 3,
                       .reservation = id};
            break;
          case kAcquireReservedCase:
            return g_client->async_command(
                acquire.for_subject(redis_limit_key(policy, subjects[i], 0)), std::move(done));
        }
        if (subject.empty()) subject = subject_of(random() % kSubjects);
        g_store->apply_quota({policy, limits, subject}, request,
                             [done = std::move(done)](const StatusOr<Decision>& decision) {
                               if (!decision.ok()) return done(decision.status());
                               done(redis::Reply::bulk(""));
                             });
      });
}

// Issue 19: what a penalty box adds to an acquire (one GET of the box, and a SET per strike),
// next to the same acquire without one, in the same run: gcra, allowed (random subjects: the box
// is read and found empty) and denied (a hot subject blocked at its first denial: the box is read
// and blocks; nothing is written).
void BM_PenaltyCost(benchmark::State& state) {
  empty_keyspace();
  const Algorithm& a = algorithms()[2];  // gcra
  const bool penalized = state.range(0) == 1;
  const bool deny = state.range(1) == 1;
  static const algorithm::Penalty kPenalty{.after = 1,
                                           .within = kMicrosPerHour,
                                           .block = kMicrosPerHour,
                                           .escalate = 1,
                                           .max = kMicrosPerHour,
                                           .quiet = kMicrosPerHour};
  const algorithm::Penalty* penalty = penalized ? &kPenalty : nullptr;
  const std::vector<Limit> limits = {deny ? a.hot : a.generous};
  const std::string policy = std::string("bench.penalty.") + (penalized ? "on" : "off");
  if (deny) {
    for (int k = 0; k < 100; ++k)
      (void)store::acquire_now(*g_store, {policy, limits, "hot", penalty}, 1);
  }
  std::mt19937_64 random(42);
  measure_redis_cost(
      state,
      std::string("gcra") + (deny ? "/deny" : "/allow") + (penalized ? "/penalty" : "/plain"),
      "evalsha", [&](std::uint64_t, redis::Callback done) {
        const std::string subject = deny ? std::string("hot") : subject_of(random() % kSubjects);
        g_store->acquire({policy, limits, subject, penalty}, 1,
                         [done = std::move(done)](const StatusOr<Decision>& decision) {
                           if (!decision.ok()) return done(decision.status());
                           done(redis::Reply::bulk(""));
                         });
      });
}

void quota_cost_arguments(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < algorithms().size(); ++i) {
    if (std::holds_alternative<algorithm::Concurrency>(algorithms()[i].generous)) continue;
    for (const QuotaCase which : {kChargeCase, kRefundCase, kReserveCase}) {
      b->Args({static_cast<std::int64_t>(i), which});
    }
  }
}

void settle_cost_arguments(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < algorithms().size(); ++i) {
    if (std::holds_alternative<algorithm::Concurrency>(algorithms()[i].generous)) continue;
    b->Args({static_cast<std::int64_t>(i), kSettleCase});
    b->Args({static_cast<std::int64_t>(i), kAcquireReservedCase});
  }
}

void script_cost_arguments(benchmark::internal::Benchmark* b) {
  for (std::size_t i = 0; i < algorithms().size(); ++i) {
    for (int deny : {0, 1}) {
      for (int batch : {1, 16}) b->Args({static_cast<std::int64_t>(i), deny, batch});
    }
  }
}

BENCHMARK(BM_IncrCost)->Iterations(kCostCalls)->UseRealTime();
BENCHMARK(BM_PlainGcraCost)->Arg(0)->Arg(1)->Iterations(kCostCalls)->UseRealTime();
BENCHMARK(BM_ScriptCost)->Apply(script_cost_arguments)->Iterations(kCostCalls)->UseRealTime();
BENCHMARK(BM_QuotaCost)->Apply(quota_cost_arguments)->Iterations(kCostCalls)->UseRealTime();
BENCHMARK(BM_QuotaCost)->Apply(settle_cost_arguments)->Iterations(kCostCalls)->UseRealTime();
BENCHMARK(BM_PenaltyCost)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Iterations(kCostCalls)
    ->UseRealTime();

// ---- 2. client overhead -------------------------------------------------------------------------

// The policy both the Sluice client and redis-benchmark run: gcra, allow path, random subjects.
const std::vector<Limit>& client_policy() {
  static const std::vector<Limit> kPolicy = {
      algorithm::Gcra{.rate = 1'000'000, .period = 1'000'000, .burst = 1'000'000}};
  return kPolicy;
}

struct Latencies {
  double per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  double client_cpu_us = 0;  // CPU the caller's side spent per decision (user + system)
  bool raw_driver = false;   // redis-benchmark could not carry the arguments (NUL bytes)
};

Latencies run_sluice_client(RedisStore& store, int callers, double seconds) {
  std::vector<std::vector<double>> samples(static_cast<std::size_t>(callers));
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(callers));
  for (int t = 0; t < callers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(static_cast<std::uint64_t>(t) + 1);
      std::vector<double>& mine = samples[static_cast<std::size_t>(t)];
      mine.reserve(200'000);
      while (!go.load()) std::this_thread::yield();
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string subject = subject_of(random() % kSubjects);
        const auto start = SteadyClock::now();
        const StatusOr<Decision> decision =
            store::acquire_now(store, {"bench.client", client_policy(), subject}, 1);
        const auto took = SteadyClock::now() - start;
        if (!decision.ok()) continue;
        mine.push_back(std::chrono::duration<double, std::micro>(took).count());
      }
    });
  }
  const auto start = SteadyClock::now();
  const double cpu_before = test::cpu_us(RUSAGE_SELF);
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (std::thread& thread : threads) thread.join();
  const double cpu = test::cpu_us(RUSAGE_SELF) - cpu_before;
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - start).count();
  std::vector<double> all;
  for (const auto& mine : samples) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  return {.per_second = static_cast<double>(all.size()) / elapsed,
          .p50_us = test::sorted_percentile(all, 0.50),
          .p99_us = test::sorted_percentile(all, 0.99),
          .client_cpu_us = all.empty() ? 0 : cpu / static_cast<double>(all.size())};
}

// redis-benchmark's method without its command line (which cannot carry NUL bytes, and the
// store's packed arguments have them): one thread, `clients` non-blocking connections, each
// sending `pipeline` requests at once and timing each from the batch's send to its reply.
Latencies run_raw_driver(const CapturedCall& call, int clients, int pipeline, int requests) {
  struct Connection {
    redisContext* context = nullptr;
    int outstanding = 0;
    SteadyClock::time_point sent;
  };
  std::vector<Connection> connections(static_cast<std::size_t>(clients));
  for (Connection& c : connections) {
    c.context = redisConnectNonBlock("127.0.0.1", g_server->port());
    if (c.context == nullptr || c.context->err != 0) return {};
  }
  std::mt19937_64 random(7);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(requests));
  int started = 0;
  const double cpu_before = test::cpu_us(RUSAGE_THREAD);
  const auto begin = SteadyClock::now();
  const auto send_batch = [&](Connection& c) {
    for (int i = 0; i < pipeline && started < requests; ++i, ++started, ++c.outstanding) {
      std::vector<std::string> args = call.args;
      args[call.key] = redis_limit_key("bench.client", subject_of(random() % kSubjects), 0);
      std::vector<const char*> argv;
      std::vector<std::size_t> lengths;
      for (const std::string& arg : args) {
        argv.push_back(arg.data());
        lengths.push_back(arg.size());
      }
      redisAppendCommandArgv(c.context, static_cast<int>(argv.size()), argv.data(), lengths.data());
    }
    c.sent = SteadyClock::now();
    int done = 0;
    while (done == 0) {
      if (redisBufferWrite(c.context, &done) != REDIS_OK) return false;
    }
    return true;
  };
  for (Connection& c : connections) {
    if (!send_batch(c)) return {};
  }
  std::vector<pollfd> fds(connections.size());
  bool failed = false;
  while (!failed && static_cast<int>(samples.size()) < requests) {
    for (std::size_t i = 0; i < connections.size(); ++i) {
      fds[i] = {.fd = connections[i].context->fd,
                .events = static_cast<short>(connections[i].outstanding > 0 ? POLLIN : 0),
                .revents = 0};
    }
    if (::poll(fds.data(), fds.size(), 5000) <= 0) break;
    for (std::size_t i = 0; i < connections.size() && !failed; ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      Connection& c = connections[i];
      if (redisBufferRead(c.context) != REDIS_OK) {
        failed = true;
        break;
      }
      void* reply = nullptr;
      while (c.outstanding > 0 && redisGetReplyFromReader(c.context, &reply) == REDIS_OK &&
             reply != nullptr) {
        if (static_cast<redisReply*>(reply)->type == REDIS_REPLY_ERROR) failed = true;
        freeReplyObject(reply);
        --c.outstanding;
        samples.push_back(
            std::chrono::duration<double, std::micro>(SteadyClock::now() - c.sent).count());
      }
      if (c.outstanding == 0 && started < requests && !send_batch(c)) failed = true;
    }
  }
  const double elapsed = std::chrono::duration<double>(SteadyClock::now() - begin).count();
  const double cpu = test::cpu_us(RUSAGE_THREAD) - cpu_before;
  for (Connection& c : connections) redisFree(c.context);
  if (failed || samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {.per_second = static_cast<double>(samples.size()) / elapsed,
          .p50_us = test::sorted_percentile(samples, 0.50),
          .p99_us = test::sorted_percentile(samples, 0.99),
          .client_cpu_us = cpu / static_cast<double>(samples.size()),
          .raw_driver = true};
}

// redis-benchmark sending the store's own command (script and arguments as captured) with random
// subjects; the raw driver above when the arguments hold NUL bytes.
Latencies run_redis_benchmark(int clients, int pipeline, int requests) {
  const CapturedCall call = capture_acquire("bench.client", client_policy(), subject_of(0), 1);
  if (call.args.empty()) return {};
  // Random 12-digit subjects, as the Sluice client uses (redis-benchmark -r fills __rand_int__).
  std::string command = "redis-benchmark -h 127.0.0.1 -p " + std::to_string(g_server->port()) +
                        " -c " + std::to_string(clients) + " -P " + std::to_string(pipeline) +
                        " -n " + std::to_string(requests) + " -r " + std::to_string(kSubjects) +
                        " --csv";
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    // Single-quoted for the shell; the packed arguments' bytes may include quotes and NULs,
    // which a command line cannot carry: hex-escape-free bytes only (checked below).
    const std::string arg =
        i == call.key ? redis_limit_key("bench.client", "__rand_int__", 0) : call.args[i];
    if (arg.find('\0') != std::string::npos) {
      return run_raw_driver(call, clients, pipeline, requests);
    }
    std::string quoted = "'";
    for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  command += " 2>/dev/null";
  const double children_before = test::cpu_us(RUSAGE_CHILDREN);
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  ::pclose(pipe);  // waits for the shell and redis-benchmark: their CPU is now in RUSAGE_CHILDREN
  const double children_cpu = test::cpu_us(RUSAGE_CHILDREN) - children_before;
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
  // "p99_latency_ms","max_latency_ms"
  const std::size_t header = output.find("\"test\"");
  const std::size_t line = header == std::string::npos ? header : output.find('\n', header) + 1;
  if (line == std::string::npos || line >= output.size()) return {};
  std::vector<double> values;
  std::istringstream fields(output.substr(output.find("\",\"", line) + 3));
  std::string field;
  while (std::getline(fields, field, ',')) {
    field.erase(std::remove(field.begin(), field.end(), '"'), field.end());
    values.push_back(std::atof(field.c_str()));
  }
  if (values.size() < 6) return {};
  return {.per_second = values[0],
          .p50_us = values[3] * 1000,
          .p99_us = values[5] * 1000,
          .client_cpu_us = children_cpu / requests};
}

void record_latencies(benchmark::State& state, const std::string& label, const Latencies& l) {
  state.counters["per_second"] = l.per_second;
  state.counters["p50_us"] = l.p50_us;
  state.counters["p99_us"] = l.p99_us;
  state.counters["client_cpu_us"] = l.client_cpu_us;
  state.counters["raw_driver"] = l.raw_driver ? 1 : 0;
  std::lock_guard lock(g_results_mu);
  g_client_rows[label] = {{"per_second", l.per_second},
                          {"p50_us", l.p50_us},
                          {"p99_us", l.p99_us},
                          {"client_cpu_us", l.client_cpu_us},
                          {"raw_driver", l.raw_driver ? 1.0 : 0.0}};
}

// Runs for max(2 s, 4 x min_time) (0.05 s in a smoke run); the whole run is one iteration.
double client_seconds() { return smoke_run() ? 0.05 : std::max(2.0, 4 * g_min_time); }

// Arguments: callers; 1 = the store as configured by default (decision batches), 0 = without
// batching (max_batch 1: one script call per decision, pipelined by the client).
void BM_SluiceClient(benchmark::State& state) {
  const int callers = static_cast<int>(state.range(0));
  const bool batched = state.range(1) == 1;
  RedisStore& store = batched ? *g_store : *g_unbatched_store;
  (void)store::acquire_now(store, {"bench.client", client_policy(), "warm-up"},
                           1);  // loads the script
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
    const redis::ClientStats before = g_client->stats();
    const DecisionBatchStats batches_before = store.batch_stats();
    const RedisCpu cpu_before = redis_cpu();
    const Latencies l = run_sluice_client(store, callers, client_seconds());
    const RedisCpu cpu_after = redis_cpu();
    const DecisionBatchStats batches_after = store.batch_stats();
    const redis::ClientStats after = g_client->stats();
    // How well concurrent calls share socket writes (1 = every call wrote alone).
    state.counters["requests_per_write"] =
        static_cast<double>(after.requests - before.requests) /
        static_cast<double>(std::max<std::uint64_t>(1, after.writes - before.writes));
    const auto decisions = static_cast<double>(batches_after.decisions - batches_before.decisions);
    state.counters["decisions_per_call"] =
        decisions /
        static_cast<double>(std::max<std::uint64_t>(1, batches_after.calls - batches_before.calls));
    state.counters["redis_cpu_us"] =
        decisions > 0 ? (cpu_after.stat_us - cpu_before.stat_us) / decisions : 0;
    state.SetIterationTime(client_seconds());
    const std::string label =
        "sluice client, " + std::to_string(callers) + " callers" + (batched ? "" : ", unbatched");
    record_latencies(state, label, l);
    std::lock_guard lock(g_results_mu);
    g_client_rows[label]["redis_cpu_us"] = state.counters["redis_cpu_us"];
    g_client_rows[label]["decisions_per_call"] = state.counters["decisions_per_call"];
  }
}
BENCHMARK(BM_SluiceClient)->ArgsProduct({{1, 10, 100}, {1, 0}})->Iterations(1)->UseManualTime();

void BM_RedisBenchmarkEvalsha(benchmark::State& state) {
  const int clients = static_cast<int>(state.range(0));
  const int pipeline = static_cast<int>(state.range(1));
  (void)store::acquire_now(*g_store, {"bench.client", client_policy(), "warm-up"},
                           1);  // loads the script
  // Request counts: a few seconds each on the 2-core test machine (at 5–40 k EVALSHA/s).
  const int requests = smoke_run() ? 2'000 : (clients == 1 ? 20'000 : 150'000);
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
    const auto start = SteadyClock::now();
    const Latencies l = run_redis_benchmark(clients, pipeline, requests);
    state.SetIterationTime(std::chrono::duration<double>(SteadyClock::now() - start).count());
    if (l.per_second == 0) state.SkipWithError("redis-benchmark gave no result");
    record_latencies(
        state,
        "redis-benchmark EVALSHA -c " + std::to_string(clients) + " -P " + std::to_string(pipeline),
        l);
  }
}
BENCHMARK(BM_RedisBenchmarkEvalsha)
    ->Args({1, 1})
    ->Args({10, 1})
    ->Args({100, 1})
    ->Args({100, 16})
    ->Iterations(1)
    ->UseManualTime();

// ---- 3. memory per key --------------------------------------------------------------------------

std::int64_t used_memory() {
  StatusOr<redis::Reply> info = g_client->command({"INFO", "memory"});
  if (!info.ok()) return 0;
  const std::string& text = info->as_string();
  const std::size_t at = text.find("used_memory:");
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + 12));
}

std::map<std::string, std::pair<std::int64_t, double>> g_memory;  // MEMORY USAGE, used/subject

// One key after a single admitted request (cost 1), subject "user-000000000042" under a policy
// named like a real one; plus INFO used_memory growth per subject over 20 000 subjects.
void BM_KeyMemory(benchmark::State& state) {
  const Algorithm& a = algorithms()[static_cast<std::size_t>(state.range(0))];
  const std::vector<Limit> limits = {a.hot};
  const std::string policy = std::string("orders.create.") + a.name;
  const int subjects = smoke_run() ? 200 : 20'000;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
    (void)g_client->command({"FLUSHALL"});
    const std::int64_t before = used_memory();
    for (int s = 0; s < subjects; ++s) {
      (void)store::acquire_now(
          *g_store, {policy, limits, "user-" + subject_of(static_cast<std::uint64_t>(s))}, 1);
    }
    const double per_subject =
        static_cast<double>(used_memory() - before) / static_cast<double>(subjects);
    StatusOr<redis::Reply> usage = g_client->command(
        {"MEMORY", "USAGE", redis_limit_key(policy, "user-" + subject_of(42), 0), "SAMPLES", "0"});
    const std::int64_t bytes = usage.ok() && usage->is_integer() ? usage->as_integer() : -1;
    state.counters["memory_usage_bytes"] = static_cast<double>(bytes);
    state.counters["used_memory_per_subject"] = per_subject;
    std::lock_guard lock(g_results_mu);
    g_memory[a.name] = {bytes, per_subject};
  }
  (void)g_client->command({"FLUSHALL"});
}
BENCHMARK(BM_KeyMemory)->DenseRange(0, 9)->Iterations(1)->Repetitions(1);

// MEMORY USAGE of one gcra key by the key's length, which counts too: Redis 7 reports the value
// object, the key's sds allocation (a jemalloc size class) and the dict entry. Policy "g" and a
// padded subject give keys of state.range(0) bytes; state.range(1) = 1 picks a rate whose TAT
// keeps a fraction (3 per second), stored packed instead of as a decimal integer.
std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> g_by_length;

void BM_KeyMemoryByKeyLength(benchmark::State& state) {
  const std::int64_t key_length = state.range(0);
  const bool fraction = state.range(1) == 1;
  const std::vector<Limit> limits = {
      fraction ? Limit{algorithm::Gcra{.rate = 3, .period = 1'000'000, .burst = 9}}
               : Limit{algorithm::Gcra{.rate = 1, .period = kMicrosPerHour, .burst = 9}}};
  const std::string policy = "g";
  // sluice:{g:<subject>}:0 is 13 bytes plus the subject.
  const std::string subject(static_cast<std::size_t>(key_length - 13), 's');
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
    (void)g_client->command({"FLUSHALL"});
    (void)store::acquire_now(*g_store, {policy, limits, subject}, 1);
    const std::string key = redis_limit_key(policy, subject, 0);
    StatusOr<redis::Reply> usage = g_client->command({"MEMORY", "USAGE", key, "SAMPLES", "0"});
    const std::int64_t bytes = usage.ok() && usage->is_integer() ? usage->as_integer() : -1;
    if (static_cast<std::int64_t>(key.size()) != key_length) state.SkipWithError("key length");
    state.counters["memory_usage_bytes"] = static_cast<double>(bytes);
    std::lock_guard lock(g_results_mu);
    g_by_length[{key_length, state.range(1)}] = bytes;
  }
  (void)g_client->command({"FLUSHALL"});
}
BENCHMARK(BM_KeyMemoryByKeyLength)
    ->ArgsProduct({{24, 30, 31, 32, 44, 45, 47, 55, 60, 61, 64}, {0, 1}})
    ->Iterations(1)
    ->Repetitions(1);

// A hot key holding `entries` log entries or leases: memory grows per entry, and Redis switches
// the encoding from listpack to skiplist / hashtable past 128 (zset-max-listpack-entries) or 512
// (hash-max-listpack-entries).
std::map<std::string, std::int64_t> g_filled;  // "sliding_log x 129" -> MEMORY USAGE bytes

void BM_FilledKeyMemory(benchmark::State& state) {
  const bool log = state.range(0) == 0;
  const std::int64_t entries = state.range(1);
  const std::vector<Limit> limits = {
      log ? Limit{algorithm::SlidingLog{.limit = 10'000, .window = kMicrosPerHour}}
          : Limit{algorithm::Concurrency{.limit = 100'000, .lease_ttl = kMicrosPerHour}}};
  const std::string policy = "orders.create";
  const std::string subject = "user-" + subject_of(42);
  if (smoke_run() && entries > 10) {
    state.SkipWithError("skipped in a smoke run");
    return;
  }
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): Google Benchmark's loop
    (void)g_client->command({"FLUSHALL"});
    if (log) {  // one entry per admitted unit: one request of cost `entries`
      (void)store::acquire_now(*g_store, {policy, limits, subject}, entries);
    } else {  // one lease per request
      for (std::int64_t i = 0; i < entries; ++i)
        (void)store::acquire_now(*g_store, {policy, limits, subject}, 1);
    }
    StatusOr<redis::Reply> usage =
        g_client->command({"MEMORY", "USAGE", redis_limit_key(policy, subject, 0), "SAMPLES", "0"});
    const std::int64_t bytes = usage.ok() && usage->is_integer() ? usage->as_integer() : -1;
    state.counters["memory_usage_bytes"] = static_cast<double>(bytes);
    state.counters["bytes_per_entry"] = static_cast<double>(bytes) / static_cast<double>(entries);
    std::lock_guard lock(g_results_mu);
    g_filled[std::string(log ? "sliding_log" : "concurrency") + " x " + std::to_string(entries)] =
        bytes;
  }
  (void)g_client->command({"FLUSHALL"});
}
BENCHMARK(BM_FilledKeyMemory)
    ->ArgsProduct({{0}, {10, 128, 129, 1000, 10'000}})
    ->ArgsProduct({{1}, {10, 512, 513, 1000}})
    ->Iterations(1)
    ->Repetitions(1);

// ---- summary ------------------------------------------------------------------------------------

// The median of one column over a label's runs.
double median_of(const std::vector<CostResult>& runs, double CostResult::*column) {
  std::vector<double> values;
  values.reserve(runs.size());
  for (const CostResult& run : runs) values.push_back(run.*column);
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

CostResult median_cost(const std::vector<CostResult>& runs) {
  return {.stat_us = median_of(runs, &CostResult::stat_us),
          .sched_us = median_of(runs, &CostResult::sched_us),
          .exec_us = median_of(runs, &CostResult::exec_us),
          .per_second = median_of(runs, &CostResult::per_second),
          .instructions = median_of(runs, &CostResult::instructions)};
}

void print_summary() {
  std::lock_guard lock(g_results_mu);
  std::map<std::string, CostResult> medians;
  for (const auto& [label, runs] : g_costs) medians[label] = median_cost(runs);
  const auto ratio_to = [&](const std::string& label, double CostResult::*column, double value) {
    const auto base = medians.find(label);
    return base == medians.end() || base->second.*column <= 0 ? 0 : value / base->second.*column;
  };
  // x allow: a quota operation (or the deny path) against the same algorithm's allow path, the
  // comparison docs/redis-scripts.md's cost table makes (issue 19: charge, settle and refund cost
  // no more than an acquire).
  std::fprintf(
      stderr,
      "\nScript cost: redis-server CPU per decision (µs), medians of `runs` runs; x INCR = "
      "ratio to INCR, x allow = stat_us ratio to the algorithm's allow path; ir = instructions "
      "per decision under SLUICE_BENCH_CALLGRIND, and its ratio to the allow path's\n"
      "%-30s %9s %9s %9s %9s %9s %10s %9s %9s %9s %5s\n",
      "script/path", "stat_us", "x INCR", "sched_us", "x INCR", "exec_us", "per_s", "x allow", "ir",
      "x allow", "runs");
  for (const auto& [label, r] : medians) {
    const std::string algorithm = label.substr(0, label.find('/'));
    std::fprintf(stderr, "%-30s %9.2f %9.2f %9.2f %9.2f %9.2f %10.0f %9.2f %9.0f %9.3f %5zu\n",
                 label.c_str(), r.stat_us, ratio_to("INCR/allow", &CostResult::stat_us, r.stat_us),
                 r.sched_us, ratio_to("INCR/allow", &CostResult::sched_us, r.sched_us), r.exec_us,
                 r.per_second, ratio_to(algorithm + "/allow", &CostResult::stat_us, r.stat_us),
                 r.instructions,
                 ratio_to(algorithm + "/allow", &CostResult::instructions, r.instructions),
                 g_costs.at(label).size());
  }
  std::fprintf(
      stderr,
      "\nSettle against an acquire on the same keys (acquire_reserved: the same "
      "reservations made first, the settles' subjects in order): stat_us, and "
      "instructions per call under SLUICE_BENCH_CALLGRIND\n%-30s %9s %9s %9s %9s %9s %9s\n",
      "algorithm", "settle", "acquire", "x acquire", "settle_ir", "acq_ir", "x acq_ir");
  for (const auto& [label, r] : medians) {
    const std::size_t slash = label.find("/settle");
    if (slash == std::string::npos) continue;
    const std::string baseline = label.substr(0, slash) + "/acquire_reserved";
    const auto base = medians.find(baseline);
    if (base == medians.end()) continue;
    std::fprintf(stderr, "%-30s %9.2f %9.2f %9.2f %9.0f %9.0f %9.3f\n",
                 label.substr(0, slash).c_str(), r.stat_us, base->second.stat_us,
                 ratio_to(baseline, &CostResult::stat_us, r.stat_us), r.instructions,
                 base->second.instructions,
                 ratio_to(baseline, &CostResult::instructions, r.instructions));
  }
  std::fprintf(stderr,
               "\nClient overhead (gcra, allow path, random subjects); cpu_us = the calling "
               "side's CPU per decision; redis_us = redis-server's CPU per decision; "
               "per_call = decisions per script call\n%-40s %10s %9s %9s %9s %9s %9s\n",
               "caller", "per_s", "p50_us", "p99_us", "cpu_us", "redis_us", "per_call");
  for (const auto& entry : g_client_rows) {
    const std::string& label = entry.first;
    const std::map<std::string, double>& row = entry.second;
    const auto optional = [&](const char* name) {
      const auto at = row.find(name);
      return at == row.end() ? 0.0 : at->second;
    };
    std::fprintf(stderr, "%-40s %10.0f %9.1f %9.1f %9.2f %9.2f %9.1f\n", label.c_str(),
                 row.at("per_second"), row.at("p50_us"), row.at("p99_us"), row.at("client_cpu_us"),
                 optional("redis_cpu_us"), optional("decisions_per_call"));
  }
  for (const auto& [label, row] : g_client_rows) {
    if (row.at("raw_driver") != 0) {
      std::fprintf(stderr,
                   "(%s: the store's arguments hold NUL bytes, which redis-benchmark's "
                   "command line cannot carry; measured with the built-in raw driver instead)\n",
                   label.c_str());
    }
  }
  const auto sluice100 = g_client_rows.find("sluice client, 100 callers");
  const auto bench16 = g_client_rows.find("redis-benchmark EVALSHA -c 100 -P 16");
  const auto sluice1 = g_client_rows.find("sluice client, 1 callers");
  const auto bench1 = g_client_rows.find("redis-benchmark EVALSHA -c 1 -P 1");
  if (sluice100 != g_client_rows.end() && bench16 != g_client_rows.end()) {
    std::fprintf(stderr,
                 "100 callers / redis-benchmark -P 16 throughput: %.0f%% (target >= 80%%)\n",
                 100 * sluice100->second.at("per_second") / bench16->second.at("per_second"));
  }
  if (sluice1 != g_client_rows.end() && bench1 != g_client_rows.end()) {
    std::fprintf(stderr, "1 caller p50 - redis-benchmark -c 1 -P 1 p50: %+.1f us (target <= +20)\n",
                 sluice1->second.at("p50_us") - bench1->second.at("p50_us"));
  }
  std::fprintf(stderr, "\nMemory: one key after one admitted request; used_memory per subject\n");
  for (const auto& [name, m] : g_memory) {
    std::fprintf(stderr, "%-24s MEMORY USAGE %5lld B   used_memory/subject %7.1f B\n", name.c_str(),
                 static_cast<long long>(m.first), m.second);
  }
  for (const auto& [name, bytes] : g_filled) {
    std::fprintf(stderr, "%-24s MEMORY USAGE %7lld B\n", name.c_str(),
                 static_cast<long long>(bytes));
  }
  for (const auto& [length_fraction, bytes] : g_by_length) {
    std::fprintf(stderr, "gcra key of %3lld B, %-11s MEMORY USAGE %5lld B\n",
                 static_cast<long long>(length_fraction.first),
                 length_fraction.second == 1 ? "fraction" : "no fraction",
                 static_cast<long long>(bytes));
  }
}

}  // namespace
}  // namespace sluice::store

int main(int argc, char** argv) {
  using namespace sluice;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--benchmark_min_time=", 0) == 0) {
      store::g_min_time = std::atof(arg.c_str() + std::strlen("--benchmark_min_time="));
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  StatusOr<std::unique_ptr<test::RedisServer>> server = test::RedisServer::start();
  if (!server.ok()) {
    std::fprintf(stderr, "redis-server: %s\n", server.status().to_string().c_str());
    return 1;
  }
  store::g_server = std::move(*server);
  StatusOr<std::unique_ptr<redis::Multiplexer>> client =
      redis::Multiplexer::create({.port = store::g_server->port()});
  if (!client.ok()) {
    std::fprintf(stderr, "client: %s\n", client.status().to_string().c_str());
    return 1;
  }
  store::g_client = std::move(*client);
  store::g_store = std::make_unique<store::RedisStore>(store::g_client);
  store::g_unbatched_store = std::make_unique<store::RedisStore>(
      store::g_client, store::RedisStoreOptions{.max_batch = 1});
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  store::print_summary();
  store::g_store.reset();
  store::g_unbatched_store.reset();
  store::g_client.reset();
  store::g_server.reset();
  return 0;
}
