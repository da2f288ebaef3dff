// The gRPC target of `sluice bench`: a running `sluice serve --grpc-listen`, loaded through
// Envoy's RateLimitService/ShouldRateLimit as Envoy calls it — the domain is --app, and each
// request carries one descriptor [{KEY: subject}]. Each load thread gets a channel (one HTTP/2
// connection) of its own, as the HTTP target gives each a keep-alive connection; in --mode async
// the callers are calls in flight on grpc++'s callback API over a few channels. gRPC types stay
// out of this header (generated code is slow to compile).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/bench/load_generator.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::bench {

struct GrpcTargetOptions {
  std::string address;  // HOST:PORT (a grpc:// prefix is accepted)
  std::string domain = "bench";
  std::string descriptor_key = "key";  // the server needs a policy matching [{key}] in domain
  std::int64_t cost = 1;               // sent as the descriptor's hits_addend
  Micros request_timeout = 5 * kMicrosPerSecond;
  // --mode async: the HTTP/2 connections the callers' requests are spread over.
  int async_channels = 2;
};

// Sends one peek (hits_addend 0) on a subject the load never uses, so an unreachable server
// (Unavailable) or a descriptor no policy matches (NotFound) fails here, once. Thread-safe;
// for_thread(i) connects thread i's channel before the clock starts.
StatusOr<std::unique_ptr<Target>> make_grpc_target(const GrpcTargetOptions& options);

}  // namespace sluice::bench
