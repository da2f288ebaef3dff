// Targets `sluice bench` can load: the decision service (Limiter) over the in-memory store or
// over Redis, exactly as an embedding application calls it, or a running `sluice serve` over HTTP
// (http_target.h). Also which flags of the command each target takes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/bench/load_generator.h"
#include "sluice/policy/policy.h"
#include "sluice/status.h"

namespace sluice::bench {

enum class TargetKind { kMemory, kRedis, kHttp, kGrpc };

// "memory", "redis", "http", "grpc"; InvalidArgument otherwise.
StatusOr<TargetKind> parse_target_kind(std::string_view text);
std::string_view target_kind_name(TargetKind kind);

struct TargetOptions {
  TargetKind kind = TargetKind::kMemory;
  std::string redis_url;      // kRedis: redis://[user:pass@]host:port/db
  int redis_connections = 2;  // kRedis: connections shared by every load thread
  int redis_io_threads = 1;   // kRedis: client event-loop threads
  policy::Policy policy;      // kMemory, kRedis: validated
  std::string http_url;       // kHttp: http://HOST:PORT of a `sluice serve`
  std::string server_policy;  // kHttp: name of a policy the server has
  std::string app = "bench";  // must be admitted by the policy
  std::int64_t cost = 1;
  // Memory store capacity (subjects); at least the number of keys the load uses.
  std::size_t memory_max_keys = 1'000'000;
  // The load will use decide_async (LoadMode::kAsync): refuses policies with concurrency limits.
  bool asynchronous = false;
  // kRedis: the limiter's over-limit cache (docs/defences.md), in subjects. 0 (the default): off,
  // so every decision is measured against the store, as before the cache existed.
  std::size_t over_limit_cache_entries = 0;
};

// A Target that decides through a Limiter. For Redis it waits until every connection is up (at
// most the client's connect timeout) and sends one decision, so the first measured request
// neither connects nor loads the script. Errors: InvalidArgument (bad URL or options),
// Unavailable (Redis unreachable), or the first decision's error. kHttp: make_http_target.
StatusOr<std::unique_ptr<Target>> make_target(const TargetOptions& options);

// Checks the flags of `sluice bench` the user gave (`given`, e.g. "--algorithm") against the
// target. An http run decides with the server's own policy and store, so the flags that build a
// policy (--policy-file, --algorithm, --limit, --window) or pick a store (--redis, --connections,
// --io-threads) are refused there, and it needs --url and --policy; --url and --policy are refused
// elsewhere, --redis anywhere but redis. InvalidArgument naming the first flag that does not fit.
Status check_target_flags(TargetKind kind, const std::vector<std::string>& given);

// "redis://host:port/db" without the password (for reports).
std::string redacted_redis_url(std::string_view url);

}  // namespace sluice::bench
