// RemoteLimiter: a C++ client of the decision API of `sluice serve` (DESIGN.md §5 "usable ... as
// a client of a remote server"), with the shape of service::Limiter — one decide over a
// DecisionRequest — except that policies are named, not passed: the server holds them. Blocking
// calls over a pool of keep-alive HTTP/1.1 connections (Beast, pimpl). Thread-safe: each call
// borrows an idle connection or opens one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/service/decision.h"
#include "sluice/service/limiter.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice {

struct RemoteLimiterOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;
  // Idle connections kept for reuse; more may be open while calls are in flight.
  std::size_t max_idle_connections = 8;
  Micros connect_timeout = 1 * kMicrosPerSecond;
  // Per call, for writing the request and reading the answer (a wait adds its own length).
  Micros request_timeout = 5 * kMicrosPerSecond;
};

struct RemoteLimiterStats {
  std::uint64_t requests = 0;
  std::uint64_t connects = 0;  // new connections opened (reuse keeps this low)
  std::uint64_t retries = 0;   // requests re-sent because a kept-alive connection had closed
};

// One request of a batch.
struct RemoteAcquire {
  std::string policy;
  std::string app;
  std::string key;
  std::int64_t cost = 1;
};

// A non-2xx answer of `sluice serve` as a Status: the problem's detail (and each field error)
// under the code the HTTP status maps back to; "HTTP <status>" when the body is no problem.
Status http_error_status(int status, std::string_view body);

class RemoteLimiter {
 public:
  // Resolves the host once. Errors: InvalidArgument (bad options), Unavailable (cannot resolve).
  // Connections are opened on demand.
  static StatusOr<std::unique_ptr<RemoteLimiter>> create(RemoteLimiterOptions options);
  ~RemoteLimiter();
  RemoteLimiter(const RemoteLimiter&) = delete;
  RemoteLimiter& operator=(const RemoteLimiter&) = delete;

  // The one call, shaped as service::Limiter's: `request` (app, policy, subject, cost, ...) goes
  // to the route of its operation — POST /v1/acquire (acquire, with `wait` rounded down to whole
  // milliseconds: the server retries, holding no thread, until allowed or the wait passes; peek:
  // cost 0), /v1/leases/{lease}/release and /renew (verdict.allowed: the lease was live), or
  // /v1/charge, /refund, /reserve (with `reservation_ttl`) and /settle (with `reservation`),
  // docs/quotas.md. A denial is a decision. Errors as the server maps them: NotFound "no such
  // policy for this app" (also an unknown, settled or expired reservation), InvalidArgument,
  // Unavailable (server unreachable or store down), DeadlineExceeded (no answer within
  // request_timeout plus the wait). The server holds the policies: a request naming a held policy
  // or a descriptor is InvalidArgument; store_timeout and client are the server's own.
  StatusOr<service::Decision> decide(const service::DecisionRequest& request);

  // POST /v1/acquire/batch: one result per request, in order.
  StatusOr<std::vector<StatusOr<service::Decision>>> try_acquire_batch(
      const std::vector<RemoteAcquire>& requests);

  // Positional forms of decide, kept for their callers. Their order (policy, app, ...) is not
  // DecisionRequest's (app, policy, ...): new code passes a DecisionRequest, whose designated
  // fields cannot be swapped.
  StatusOr<service::Decision> try_acquire(std::string_view policy, std::string_view app,
                                          std::string_view subject, std::int64_t cost);
  StatusOr<service::Decision> acquire(std::string_view policy, std::string_view app,
                                      std::string_view subject, std::int64_t cost, Micros wait);
  StatusOr<bool> release(std::string_view policy, std::string_view app, std::string_view subject,
                         std::string_view lease);
  StatusOr<bool> renew(std::string_view policy, std::string_view app, std::string_view subject,
                       std::string_view lease);

  // GET /readyz: OK when the server and its store answer.
  Status ready();

  RemoteLimiterStats stats() const;

 private:
  class Impl;
  explicit RemoteLimiter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
