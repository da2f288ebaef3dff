// Targets `sluice bench` can load: the decision service (Limiter) over the in-memory store or
// over Redis, exactly as an embedding application calls it. The HTTP target (a running
// `sluice serve`) has its name reserved and is refused with Unimplemented: there is no HTTP client
// here yet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/bench/load_generator.h"
#include "sluice/core/status.h"
#include "sluice/policy/policy.h"

namespace sluice::bench {

enum class TargetKind { kMemory, kRedis, kHttp };

// "memory", "redis", "http"; InvalidArgument otherwise.
StatusOr<TargetKind> parse_target_kind(std::string_view text);
std::string_view target_kind_name(TargetKind kind);

struct TargetOptions {
  TargetKind kind = TargetKind::kMemory;
  std::string redis_url;      // kRedis: redis://[user:pass@]host:port/db
  int redis_connections = 2;  // kRedis: connections shared by every load thread
  int redis_io_threads = 1;   // kRedis: client event-loop threads
  policy::Policy policy;      // validated
  std::string app = "bench";  // must be admitted by the policy
  std::int64_t cost = 1;
  // Memory store capacity (subjects); at least the number of keys the load uses.
  std::size_t memory_max_keys = 1'000'000;
};

// A Target that decides through a Limiter. For Redis it waits until every connection is up (at
// most the client's connect timeout) and sends one decision, so the first measured request
// neither connects nor loads the script. Errors: InvalidArgument (bad URL or options),
// Unavailable (Redis unreachable), Unimplemented (http), or the first decision's error.
StatusOr<std::unique_ptr<Target>> make_target(const TargetOptions& options);

// "redis://host:port/db" without the password (for reports).
std::string redacted_redis_url(std::string_view url);

}  // namespace sluice::bench
