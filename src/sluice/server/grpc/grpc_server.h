// GrpcServer: `sluice serve --grpc-listen` (docs/envoy.md). Envoy's Rate Limit Service v3
// (envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) as a thin adapter over
// service::Limiter on grpc++'s callback API — no thread blocks per call —, grpc.health.v1.Health
// (SERVING / NOT_SERVING as set_serving says) and server reflection. gRPC types stay out of this
// header: every file that includes generated code costs ~15 s to compile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sluice/server/grpc/rls_mapping.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/status.h"

namespace sluice::grpc_server {

struct RlsOptions {
  RlsHeaders headers = RlsHeaders::kNone;
  // Bound on each store call when the caller set no deadline (Envoy always sets one: the
  // filter's timeout, 20 ms by default). A caller's deadline shortens it, never lengthens it.
  Micros store_timeout = kMicrosPerSecond;
};

struct GrpcServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: pick a free one (see port())
  // Largest request message accepted (grpc++'s default is 4 MiB).
  std::int64_t max_message_bytes = std::int64_t{4} * 1024 * 1024;
  // Concurrent streams (calls) per HTTP/2 connection.
  std::int64_t max_concurrent_streams = 1024;
  RlsOptions rls;
};

class GrpcServer {
 public:
  // Starts serving; the limiter and lookup must outlive the server. Health starts SERVING.
  // Errors: Unavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<GrpcServer>> start(GrpcServerOptions options,
                                                     service::Limiter& limiter,
                                                     const service::PolicyLookup& policies);
  ~GrpcServer();  // shutdown()
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  std::uint16_t port() const;
  // What grpc.health.v1.Health answers, for the server ("") and the RLS service. Thread-safe.
  void set_serving(bool serving);
  // Health turns NOT_SERVING, calls in flight finish (up to `grace`), then the server stops.
  // Idempotent.
  void shutdown(Micros grace = 5 * kMicrosPerSecond);

 private:
  struct State;
  explicit GrpcServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sluice::grpc_server
