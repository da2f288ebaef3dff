// `sluice bench`: load a target (the decision service over the in-memory store or Redis, or a
// running `sluice serve` over HTTP) from 1, 10, 100... threads, closed loop (as fast as answers
// come) or open loop (a fixed rate, latency from the intended send time), and report decisions/s,
// allowed/denied and latency percentiles per thread count, as a table or as JSON
// (docs/benchmarks.md, "End to end: sluice bench and peers").
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sluice/algorithm/validate.h"
#include "sluice/bench/grpc_target.h"
#include "sluice/bench/http_target.h"
#include "sluice/bench/load_generator.h"
#include "sluice/bench/report.h"
#include "sluice/bench/targets.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/client/http_url.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"
#include "sluice/version.h"

namespace sluice::cli {
namespace {

struct BenchOptions {
  std::vector<int> threads = {1, 10, 100};
  std::string duration = "5s";
  std::string warmup = "0s";
  std::uint64_t keys = 1000;
  std::string distribution = "uniform";
  std::string key_prefix = "user:";
  std::uint64_t seed = 1;
  std::string policy_file;
  std::string algorithm = "fixed_window";
  std::int64_t limit = 100;
  std::string window = "1s";
  std::int64_t cost = 1;
  std::string app = "bench";
  std::string target;  // empty: redis when --redis is given, http when --url is, else memory
  std::string redis_url;
  std::string url;                 // --target http: the server
  std::string server_policy;       // --target http: a policy the server has
  std::string descriptor = "key";  // --target grpc: the descriptor's key (its value: the subject)
  int connections = 2;
  int io_threads = 1;
  std::size_t over_limit_cache_entries = 0;  // --redis: the limiter's over-limit cache; 0: off
  std::string mode = "closed";
  double rate = 0;
  double rate_per_thread = 0;
  bool json = false;
  bool no_progress = false;
  std::vector<std::string> given;  // the flags set on the command line, for check_target_flags
};

// The policy from --policy-file, or one limit of --algorithm built from --limit and --window.
StatusOr<policy::Policy> bench_policy(const BenchOptions& options) {
  std::string text;
  if (!options.policy_file.empty()) {
    std::ifstream file(options.policy_file);
    if (!file) return invalid_argument("cannot read --policy-file " + options.policy_file);
    std::stringstream buffer;
    buffer << file.rdbuf();
    text = buffer.str();
  } else {
    SLUICE_ASSIGN_OR_RETURN(const Micros window,
                            invalid_input("--window: ", parse_duration(options.window)));
    const std::string w = format_duration(window);
    const std::int64_t l = options.limit;
    nlohmann::json limit = {{"algorithm", options.algorithm}};
    const std::string& a = options.algorithm;
    if (a == "token_bucket") {
      limit.update({{"capacity", l}, {"refill", l}, {"period", w}});
    } else if (a == "gcra") {
      limit.update({{"rate", l}, {"period", w}, {"burst", l - 1}});
    } else if (a == "leaky_bucket") {
      limit.update({{"rate", l}, {"period", w}, {"max_delay", w}});
    } else if (a == "concurrency") {
      limit.update({{"limit", l}, {"lease_ttl", w}});
    } else {
      limit.update({{"limit", l}, {"window", w}});
    }
    text = nlohmann::json{{"name", "bench"},
                          {"description", "sluice bench --algorithm " + a},
                          {"apps", {"*"}},
                          {"limits", {limit}}}
               .dump();
  }
  policy::ParsedPolicy parsed = policy::policy_from_text(text);
  if (!parsed.policy)
    return invalid_argument("invalid policy: " + policy::join_errors(parsed.errors));
  return std::move(*parsed.policy);
}

// A target that cannot be made is bad usage too (exit 2), reported with its code's name.
StatusOr<std::unique_ptr<bench::Target>> reachable(
    StatusOr<std::unique_ptr<bench::Target>> target) {
  if (target.ok()) return target;
  return invalid_argument(target.status().to_string());
}

// 20000 -> "20000", 2.5 -> "2.5".
std::string compact(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.10g", value);
  return buffer;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// One line of progress on the note stream, drawn over the last one.
void draw_progress(const Run& run, const bench::Progress& p, bool async) {
  constexpr int kWidth = 30;
  const double fraction =
      p.total_ns > 0
          ? std::min(1.0, static_cast<double>(p.elapsed_ns) / static_cast<double>(p.total_ns))
          : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.append(static_cast<std::size_t>(kWidth - filled), '.');
  const double seconds = static_cast<double>(p.elapsed_ns) / 1e9;
  char line[160];
  std::snprintf(line, sizeof line, "\r\033[K%s %-4d [%s] %5.1f/%.1fs  %.0f decisions/s",
                async ? "in flight" : "threads", p.threads, bar.c_str(), seconds,
                static_cast<double>(p.total_ns) / 1e9,
                seconds > 0 ? static_cast<double>(p.decisions) / seconds : 0.0);
  run.note() << line << std::flush;
}

Status run_bench(const Run& run, const BenchOptions& options) {
  // ---- options: every error is bad usage (exit 2) ---------------------------------------------
  SLUICE_ASSIGN_OR_RETURN(const Micros duration,
                          invalid_input("--duration: ", parse_duration(options.duration)));
  if (duration <= 0) return invalid_argument("--duration: must be greater than 0");
  SLUICE_ASSIGN_OR_RETURN(const Micros warmup,
                          invalid_input("--warmup: ", parse_duration(options.warmup)));
  SLUICE_ASSIGN_OR_RETURN(const bench::DistributionSpec distribution,
                          invalid_input("", bench::parse_distribution(options.distribution)));
  std::string target_name = options.target;
  if (target_name.empty()) {
    target_name = !options.redis_url.empty() ? "redis" : !options.url.empty() ? "http" : "memory";
  }
  SLUICE_ASSIGN_OR_RETURN(const bench::TargetKind kind,
                          invalid_input("", bench::parse_target_kind(target_name)));
  const bool http = kind == bench::TargetKind::kHttp;
  const bool grpc = kind == bench::TargetKind::kGrpc;
  SLUICE_RETURN_IF_ERROR(invalid_input("", bench::check_target_flags(kind, options.given)));
  const bool open = options.mode == "open";
  const bool async = options.mode == "async";
  if (async && kind == bench::TargetKind::kMemory) {
    return invalid_argument(
        "--mode async is for --target redis, http and grpc: their callers are requests in "
        "flight on the client, where the memory target answers on the calling thread");
  }
  if (open && options.rate <= 0 && options.rate_per_thread <= 0) {
    return invalid_argument("--mode open needs --rate (total per second) or --rate-per-thread");
  }
  if (!open && (options.rate > 0 || options.rate_per_thread > 0)) {
    return invalid_argument("--rate and --rate-per-thread are for --mode open");
  }
  // An http run decides with the server's policy: only its name is known here.
  SLUICE_ASSIGN_OR_RETURN(
      const policy::Policy policy,
      http   ? StatusOr<policy::Policy>(policy::Policy{.name = options.server_policy})
      : grpc ? StatusOr<policy::Policy>(policy::Policy{.name = "(the one matching descriptor [{" +
                                                               options.descriptor + "}])"})
             : invalid_input("", bench_policy(options)));

  bench::TargetOptions target_options{
      .kind = kind,
      .redis_url = options.redis_url,
      .redis_connections = options.connections,
      .redis_io_threads = options.io_threads,
      .policy = policy,
      .http_url = options.url,
      .server_policy = options.server_policy,
      .app = options.app,
      .cost = options.cost,
      .memory_max_keys = std::max<std::size_t>(1'000'000, 2 * options.keys),
      .asynchronous = async,
      .over_limit_cache_entries = options.over_limit_cache_entries};
  SLUICE_ASSIGN_OR_RETURN(
      const std::unique_ptr<bench::Target> target,
      reachable(grpc ? bench::make_grpc_target({.address = options.url,
                                                .domain = options.app,
                                                .descriptor_key = options.descriptor,
                                                .cost = options.cost})
                     : bench::make_target(target_options)));

  // ---- load points ---------------------------------------------------------------------------
  const bool progress = !options.no_progress && ::isatty(STDERR_FILENO) == 1;
  const bench::LoadMode mode = open    ? bench::LoadMode::kOpen
                               : async ? bench::LoadMode::kAsync
                                       : bench::LoadMode::kClosed;
  std::vector<bench::LoadResult> results;
  for (const int threads : options.threads) {
    bench::LoadOptions load{
        .threads = threads,
        .duration_ns = duration * 1'000,
        .warmup_ns = warmup * 1'000,
        .mode = mode,
        .rate_per_thread =
            options.rate_per_thread > 0 ? options.rate_per_thread : options.rate / threads,
        .distribution = distribution,
        .keys = options.keys,
        .key_prefix = options.key_prefix,
        .seed = options.seed,
    };
    if (progress)
      load.on_progress = [&run, async](const bench::Progress& p) { draw_progress(run, p, async); };
    results.push_back(bench::run_load(*target, load));
    if (progress) run.note() << "\r\033[K" << std::flush;
  }

  // ---- report --------------------------------------------------------------------------------
  std::uint64_t errors = 0;
  std::uint64_t degraded = 0;
  for (const bench::LoadResult& r : results) {
    errors += r.errors;
    degraded += r.degraded;
  }
  // make_target has parsed the URL by now.
  const std::string server_url =
      http ? format_http_url(*parse_http_url(options.url)) : std::string();
  std::string target_description(bench::target_kind_name(kind));
  if (kind == bench::TargetKind::kRedis) {
    target_description = bench::redacted_redis_url(options.redis_url) + " (" +
                         std::to_string(options.connections) + " connections)";
  } else if (http) {
    target_description =
        server_url + (async ? " (one keep-alive connection per caller, one event-loop thread)"
                            : " (one keep-alive connection per thread)");
  } else if (grpc) {
    target_description = "grpc " + options.url + " (one HTTP/2 connection per thread)";
  }
  if (options.json) {
    nlohmann::json points = nlohmann::json::array();
    for (const bench::LoadResult& r : results) points.push_back(bench::result_to_json(r, mode));
    nlohmann::json target_json = {{"kind", bench::target_kind_name(kind)}};
    if (kind == bench::TargetKind::kRedis) {
      target_json["url"] = bench::redacted_redis_url(options.redis_url);
      target_json["connections"] = options.connections;
      target_json["io_threads"] = options.io_threads;
    } else if (http) {
      target_json["url"] = server_url;
      target_json["connections_per_thread"] = 1;
    } else if (grpc) {
      target_json["url"] = options.url;
      target_json["descriptor"] = options.descriptor;
      target_json["connections_per_thread"] = 1;
    }
    nlohmann::json report = {
        {"tool", "sluice bench"},
        {"sluice_version", SLUICE_VERSION},
        {"date", utc_now()},
        {"host", {{"nproc", std::thread::hardware_concurrency()}, {"cpu", cpu_model()}}},
        {"target", target_json},
        // http: {"name": ...} only; the limits are the server's.
        {"policy",
         http || grpc ? nlohmann::json{{"name", policy.name}} : policy::policy_to_json(policy)},
        {"app", options.app},
        {"cost", options.cost},
        {"keys", options.keys},
        {"key_prefix", options.key_prefix},
        {"distribution", bench::format_distribution(distribution)},
        {"seed", options.seed},
        {"mode", options.mode},
        {"duration_s", static_cast<double>(duration) / 1e6},
        {"warmup_s", static_cast<double>(warmup) / 1e6},
        {"points", points}};
    if (open) {
      report["rate"] = options.rate_per_thread > 0
                           ? nlohmann::json{{"per_thread", options.rate_per_thread}}
                           : nlohmann::json{{"total", options.rate}};
    }
    if (errors > 0) report["first_error"] = target->first_error();
    run.out() << report.dump(2) << "\n";
  } else {
    run.out() << "sluice bench: target " << target_description << "; policy " << policy.name
              << " (";
    if (http || grpc) run.out() << "the server's";
    for (std::size_t i = 0; i < policy.limits.size(); ++i) {
      run.out() << (i > 0 ? ", " : "") << policy::limit_to_json(policy.limits[i]).dump();
    }
    run.out() << "); " << options.keys << " keys, " << bench::format_distribution(distribution)
              << "; " << (open ? "open" : "closed") << " loop";
    if (open) {
      run.out() << " at "
                << (options.rate_per_thread > 0 ? compact(options.rate_per_thread) + "/s per thread"
                                                : compact(options.rate) + "/s in total")
                << ", latency from the intended send time";
    }
    run.out() << "; " << format_duration(duration) << " per point";
    if (warmup > 0) run.out() << " after " << format_duration(warmup) << " of warm-up";
    run.out() << "\n\n" << bench::format_table(results, mode);
  }
  // Failed or degraded decisions end the run with exit 1 (docs/cli.md); each is one line, the
  // last of them the run's error.
  std::vector<std::string> failures;
  if (errors > 0) {
    failures.push_back(std::to_string(errors) +
                       " decisions failed; the first: " + target->first_error());
  }
  if (degraded > 0) {
    failures.push_back(std::to_string(degraded) +
                       " decisions were degraded (store unreachable; decided by "
                       "on_store_failure)");
  }
  if (failures.empty()) return {};
  for (std::size_t i = 0; i + 1 < failures.size(); ++i) run.warn(failures[i]);
  return {StatusCode::kUnknown, failures.back()};
}

}  // namespace

void add_bench_command(CLI::App& app, std::shared_ptr<const Environment> env) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App* command = app.add_subcommand(
      "bench", "Load the decision service from N threads; report decisions/s and latencies");
  command->footer(
      "Examples:\n"
      "  sluice bench --duration 2s\n"
      "  sluice bench --redis redis://127.0.0.1:6379 --threads 1,10,100 --json\n"
      "  sluice bench --target http --url http://127.0.0.1:8080 --policy demo.api\n"
      "  sluice bench --distribution zipf:0.99 --keys 100000 --mode open --rate 20000\n"
      "  sluice bench --target grpc --url 127.0.0.1:8081 --app DOMAIN --descriptor KEY\n"
      "--target grpc loads a running `sluice serve --grpc-listen` through Envoy's ShouldRateLimit\n"
      "(domain --app, one descriptor [{KEY: subject}], one HTTP/2 connection per thread).\n"
      "--target http loads a running `sluice serve` (POST /v1/acquire, one keep-alive connection\n"
      "per thread; with --mode async one per caller, all on one event-loop thread) with a policy\n"
      "the server has (--policy NAME, its apps must admit --app);\n"
      "--policy-file, --algorithm, --limit, --window, --redis, --connections and --io-threads are\n"
      "refused with it.\n"
      "Exit status: 0; 1 when some decisions failed or were degraded; 2 for bad options or an\n"
      "unreachable target.");
  command->add_option("--threads", options->threads, "Thread counts to sweep, one point each")
      ->delimiter(',')
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  command->add_option("--duration", options->duration, "Measured time per point (e.g. 2s, 500ms)")
      ->capture_default_str();
  command->add_option("--warmup", options->warmup, "Unmeasured load before each point")
      ->capture_default_str();
  command->add_option("--keys", options->keys, "Distinct subjects the load draws from")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1'000'000'000}))
      ->capture_default_str();
  command
      ->add_option("--distribution", options->distribution,
                   "hot (one key), uniform, zipf (s = 1) or zipf:S")
      ->capture_default_str();
  command->add_option("--key-prefix", options->key_prefix, "Subjects are PREFIX<index>")
      ->capture_default_str();
  command->add_option("--seed", options->seed, "Seed of the key draws (thread i: stream i)")
      ->capture_default_str();
  CLI::Option* policy_file =
      command->add_option("--policy-file", options->policy_file, "Policy document (YAML or JSON)")
          ->check(CLI::ExistingFile);
  CLI::Option* algorithm =
      command
          ->add_option("--algorithm", options->algorithm,
                       "Without --policy-file: one limit of this algorithm")
          ->check(CLI::IsMember({"token_bucket", "gcra", "leaky_bucket", "fixed_window",
                                 "sliding_window", "sliding_log", "concurrency"}))
          ->capture_default_str();
  CLI::Option* limit =
      command
          ->add_option("--limit", options->limit,
                       "Without --policy-file: limit (capacity, rate) per --window")
          ->check(CLI::Range(std::int64_t{1}, std::int64_t{1'000'000'000'000}))
          ->capture_default_str();
  CLI::Option* window = command
                            ->add_option("--window", options->window,
                                         "Without --policy-file: window (period, lease_ttl)")
                            ->capture_default_str();
  policy_file->excludes(algorithm)->excludes(limit)->excludes(window);
  command->add_option("--cost", options->cost, "Units each request consumes")
      ->check(CLI::Range(std::int64_t{0}, algorithm::kMaxCost))
      ->capture_default_str();
  command->add_option("--app", options->app, "Calling app; the policy must list it or \"*\"")
      ->capture_default_str();
  command
      ->add_option("--target", options->target,
                   "memory | redis | http | grpc (a running `sluice serve`); "
                   "default: redis with --redis, http with --url, else memory")
      ->check(CLI::IsMember({"memory", "redis", "http", "grpc"}));
  command->add_option(
      "--redis", options->redis_url,
      "Redis to decide on: redis://[user:pass@]host:port/db, redis+cluster://h1:p1,h2:p2, "
      "redis+sentinel://s1:p1/MASTER, rediss… for TLS");
  command->add_option("--url", options->url,
                      "--target http: the server, http://HOST:PORT; --target grpc: HOST:PORT");
  command
      ->add_option("--descriptor", options->descriptor,
                   "--target grpc: the descriptor key each request carries (value: the subject)")
      ->capture_default_str();
  command->add_option("--policy", options->server_policy,
                      "--target http: name of a policy the server has (e.g. demo.api)");
  command->add_option("--connections", options->connections, "Redis connections (shared)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  command->add_option("--io-threads", options->io_threads, "Redis client event-loop threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  command
      ->add_option("--over-limit-cache-entries", options->over_limit_cache_entries,
                   "Redis: the limiter's local over-limit cache, in subjects (docs/defences.md); "
                   "0: off, every decision asks Redis")
      ->check(CLI::Range(std::size_t{0}, std::size_t{100'000'000}))
      ->capture_default_str();
  command
      ->add_option(
          "--mode", options->mode,
          "closed: each thread sends when the last answer came (max throughput); "
          "open: a fixed rate, latency from the intended send time; async (redis, http, grpc): "
          "closed loop whose callers are requests in flight, not threads (http: a "
          "connection each, one event-loop thread)")
      ->check(CLI::IsMember({"closed", "open", "async"}))
      ->capture_default_str();
  CLI::Option* rate =
      command
          ->add_option("--rate", options->rate,
                       "Open loop: decisions/s in total, split evenly over the threads")
          ->check(CLI::PositiveNumber);
  CLI::Option* rate_per_thread = command
                                     ->add_option("--rate-per-thread", options->rate_per_thread,
                                                  "Open loop: decisions/s each thread sends")
                                     ->check(CLI::PositiveNumber);
  rate->excludes(rate_per_thread);
  command->add_flag("--json", options->json, "One JSON document on stdout");
  command->add_flag("--no-progress", options->no_progress,
                    "No progress bar (it is drawn on stderr only when that is a terminal)");
  command->callback([env, options, command] {
    // Which flags were set, not their values: a default --algorithm is fine for http, a given one
    // is a mistake worth naming.
    options->given.clear();
    for (const char* flag :
         {"--policy-file", "--algorithm", "--limit", "--window", "--redis", "--connections",
          "--io-threads", "--url", "--policy", "--descriptor"}) {
      if (command->count(flag) > 0) options->given.emplace_back(flag);
    }
    const Run run(*env, "bench");
    env->exit(run.finish(run_bench(run, *options)));
  });
}

}  // namespace sluice::cli
