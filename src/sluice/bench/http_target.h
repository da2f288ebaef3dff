// The HTTP target of `sluice bench`: a running `sluice serve`, loaded through its decision API
// (POST /v1/acquire) with RemoteLimiter. Each load thread gets a client of its own and so one
// keep-alive connection of its own, as that many independent callers would have (100 threads =
// 100 connections). The policy is the server's, named, not built here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/bench/load_generator.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::bench {

struct HttpTargetOptions {
  std::string url;     // as parse_http_url takes it
  std::string policy;  // a policy the server has and that admits `app`
  std::string app = "bench";
  std::int64_t cost = 1;
  Micros connect_timeout = 1 * kMicrosPerSecond;
  Micros request_timeout = 5 * kMicrosPerSecond;  // per decision
  // --mode async: callers are requests in flight, a connection each, on one event-loop thread
  // (http_async_target.h) instead of a blocking client per load thread.
  bool asynchronous = false;
};

// Sends one decision on a subject the load never uses ("sluice-bench-prime"), so an unreachable
// server (Unavailable), a policy the server does not have or that does not admit the app
// (NotFound) or a bad cost (InvalidArgument) fails here, once, instead of on every request; a
// degraded answer (the server's store is down) is Unavailable. InvalidArgument for a bad URL.
// The target is thread-safe; `for_thread(i)` gives load thread i its own connection, opened
// before the clock starts and kept across load points.
StatusOr<std::unique_ptr<Target>> make_http_target(const HttpTargetOptions& options);

}  // namespace sluice::bench
