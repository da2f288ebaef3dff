#include "sluice/bench/targets.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "sluice/algorithm/evaluate.h"
#include "sluice/bench/http_target.h"
#include "sluice/core/status_macros.h"
#include "sluice/service/backend.h"
#include "sluice/service/limiter.h"
#include "sluice/store/redis/redis_store.h"

namespace sluice::bench {

StatusOr<TargetKind> parse_target_kind(std::string_view text) {
  if (text == "memory") return TargetKind::kMemory;
  if (text == "redis") return TargetKind::kRedis;
  if (text == "http") return TargetKind::kHttp;
  if (text == "grpc") return TargetKind::kGrpc;
  return invalid_argument("target: must be memory, redis, http or grpc (got \"" +
                          std::string(text) + "\")");
}

std::string_view target_kind_name(TargetKind kind) {
  switch (kind) {
    case TargetKind::kMemory:
      return "memory";
    case TargetKind::kRedis:
      return "redis";
    case TargetKind::kHttp:
      return "http";
    case TargetKind::kGrpc:
      return "grpc";
  }
  return "?";
}

std::string redacted_redis_url(std::string_view url) {
  const StatusOr<redis::RedisUrl> parsed = redis::parse_redis_url(url);
  return parsed.ok() ? redis::redacted_url(*parsed) : std::string("(invalid redis URL)");
}

Status check_target_flags(TargetKind kind, const std::vector<std::string>& given) {
  const auto has = [&](std::string_view flag) {
    return std::find(given.begin(), given.end(), flag) != given.end();
  };
  if (kind == TargetKind::kHttp || kind == TargetKind::kGrpc) {
    const std::string name(target_kind_name(kind));
    for (std::string_view flag : {"--redis", "--connections", "--io-threads"}) {
      if (has(flag)) {
        return invalid_argument(std::string(flag) + " does not apply to --target " + name +
                                ": the server decides on its own store, and each load thread "
                                "has one connection");
      }
    }
    for (std::string_view flag : {"--policy-file", "--algorithm", "--limit", "--window"}) {
      if (has(flag)) {
        return invalid_argument(
            std::string(flag) + " does not apply to --target " + name +
            ": the policy is the server's; " +
            (kind == TargetKind::kHttp ? "name it with --policy" : "match it with --descriptor"));
      }
    }
    if (kind == TargetKind::kGrpc) {
      if (!has("--url")) return invalid_argument("--target grpc needs --url HOST:PORT");
      if (has("--policy")) {
        return invalid_argument(
            "--policy does not apply to --target grpc: the server finds the policy by the "
            "descriptor (--descriptor KEY, in domain --app)");
      }
      return {};
    }
    if (has("--descriptor")) return invalid_argument("--descriptor is only for --target grpc");
    if (!has("--url")) return invalid_argument("--target http needs --url http://HOST:PORT");
    if (!has("--policy")) {
      return invalid_argument("--target http needs --policy NAME (a policy the server has)");
    }
    return {};
  }
  for (std::string_view flag : {"--url", "--policy"}) {
    if (has(flag)) {
      return invalid_argument(std::string(flag) + " is only for --target http or grpc");
    }
  }
  if (has("--descriptor")) return invalid_argument("--descriptor is only for --target grpc");
  if (kind != TargetKind::kRedis && has("--redis")) {
    return invalid_argument("--redis is only for --target redis");
  }
  return {};
}

class LimiterTarget final : public Target {
 public:
  explicit LimiterTarget(const TargetOptions& options)
      : policy_(std::make_shared<const policy::Policy>(options.policy)),
        app_(options.app),
        cost_(options.cost) {}

  // The backend: the memory store, or Redis with every connection ready.
  Status open(const TargetOptions& options) {
    SLUICE_ASSIGN_OR_RETURN(
        backend_, service::open_backend(
                      options.kind == TargetKind::kRedis ? options.redis_url : "memory:",
                      // Bounded in subjects only: the load's key count sizes the store, as before
                      // it had a byte bound too.
                      {.memory = {.max_keys = options.memory_max_keys,
                                  .max_bytes = std::numeric_limits<std::size_t>::max()},
                       .redis = {.connections = options.redis_connections,
                                 .io_threads = options.redis_io_threads},
                       .limiter = {.over_limit_cache_entries = options.over_limit_cache_entries}}));
    limiter_ = backend_->limiter.get();
    redis_ = backend_->redis.get();
    return redis_ ? wait_for_connections(redis_->client()) : Status();
  }

  // Wait for every connection so the first measured second is not carried by fewer of them.
  static Status wait_for_connections(redis::Multiplexer& client) {
    const redis::MultiplexerOptions& client_options = client.options();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::microseconds(client_options.connect_timeout);
    // A cluster client also waits for its slot map.
    const bool cluster = !client_options.cluster_seeds.empty();
    while ((client.stats().ready_connections < client_options.connections ||
            (cluster && client.stats().masters == 0)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return client.command({"PING"}).status();
  }

  // One decision on a subject the load never uses: loads the script, checks the app.
  Status prime() {
    SLUICE_ASSIGN_OR_RETURN(const service::Decision decision,
                            limiter_->block_on(request("sluice-bench-prime", 0)).decision);
    if (decision.degraded) return unavailable("the store did not answer the first decision");
    return {};
  }

  Outcome decide(std::string_view subject) override {
    StatusOr<service::Decision> decision = limiter_->block_on(request(subject, cost_)).decision;
    if (decision.ok() && decision->lease) {
      // Concurrency limits: give the lease back at once, as a request that completed would.
      service::DecisionRequest release = request(subject, 0);
      release.operation = service::Operation::kRelease;
      release.lease = *std::move(decision->lease);
      (void)limiter_->block_on(std::move(release));
    }
    return outcome_of(decision);
  }

  // Policies with a concurrency limit are refused by make_target in async mode: the lease would
  // have to be released, and a blocking release cannot run on the store's I/O thread.
  void decide_async(std::string_view subject, OutcomeCallback done) override {
    limiter_->decide(request(subject, cost_),
                     [this, done = std::move(done)](const service::Decided& d) {
                       done(outcome_of(d.decision));
                     });
  }

  std::string first_error() const override { return first_error_.text(); }

  std::optional<StoreCalls> store_calls() const override {
    if (!redis_) return std::nullopt;
    const store::DecisionBatchStats stats = redis_->batch_stats();
    return StoreCalls{.decisions = stats.decisions, .calls = stats.calls};
  }

 private:
  // A decision on the target's policy, which the limiter need not look up.
  service::DecisionRequest request(std::string_view subject, std::int64_t cost) const {
    return {.app = app_, .held = policy_, .subject = std::string(subject), .cost = cost};
  }

  Outcome outcome_of(const StatusOr<service::Decision>& decision) {
    if (!decision.ok()) {
      first_error_.remember(decision.status().to_string());
      return {.verdict = Verdict::kError};
    }
    return {.verdict = decision->verdict.allowed ? Verdict::kAllowed : Verdict::kDenied,
            .degraded = decision->degraded};
  }

  std::shared_ptr<const policy::Policy> policy_;
  std::string app_;
  std::int64_t cost_;
  std::unique_ptr<service::Backend> backend_;
  service::Limiter* limiter_ = nullptr;  // backend_'s
  store::RedisStore* redis_ = nullptr;   // backend_'s, on Redis
  FirstError first_error_;
};

StatusOr<std::unique_ptr<Target>> make_target(const TargetOptions& options) {
  if (options.kind == TargetKind::kGrpc) {
    return invalid_argument("target grpc: made by make_grpc_target (grpc_target.h)");
  }
  if (options.kind == TargetKind::kHttp) {
    if (options.http_url.empty()) return invalid_argument("target http needs a --url");
    return make_http_target({.url = options.http_url,
                             .policy = options.server_policy,
                             .app = options.app,
                             .cost = options.cost,
                             .asynchronous = options.asynchronous});
  }
  if (options.asynchronous && algorithm::uses_leases(options.policy.limits)) {
    return invalid_argument(
        "--mode async: the policy has a concurrency limit, whose leases the load would have to "
        "release after each decision; run it with --mode closed");
  }
  if (options.kind == TargetKind::kRedis && options.redis_url.empty()) {
    return invalid_argument("target redis needs a --redis URL");
  }
  auto target = std::make_unique<LimiterTarget>(options);
  SLUICE_RETURN_IF_ERROR(target->open(options));
  SLUICE_RETURN_IF_ERROR(target->prime());
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace sluice::bench
