// RemoteLimiter: a C++ client of the decision API of `sluice serve` (DESIGN.md §5 "usable ... as
// a client of a remote server"), with the shape of service::Limiter — try_acquire / release /
// renew — except that policies are named, not passed: the server holds them. Blocking calls over
// a pool of keep-alive HTTP/1.1 connections (Beast, pimpl). Thread-safe: each call borrows an
// idle connection or opens one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/service/decision.h"
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

  // POST /v1/acquire. A denial is a decision. Errors as the server maps them: NotFound "no such
  // policy for this app", InvalidArgument, Unavailable (server unreachable or store down),
  // DeadlineExceeded (no answer within request_timeout).
  StatusOr<service::Decision> try_acquire(std::string_view policy, std::string_view app,
                                          std::string_view subject, std::int64_t cost);
  // As try_acquire, but the server retries (without holding a thread) until the request is
  // allowed or `wait` passes, and returns the last decision.
  StatusOr<service::Decision> acquire(std::string_view policy, std::string_view app,
                                      std::string_view subject, std::int64_t cost, Micros wait);
  // POST /v1/acquire/batch: one result per request, in order.
  StatusOr<std::vector<StatusOr<service::Decision>>> try_acquire_batch(
      const std::vector<RemoteAcquire>& requests);

  // POST /v1/leases/{lease}/release and /renew.
  StatusOr<bool> release(std::string_view policy, std::string_view app, std::string_view subject,
                         std::string_view lease);
  StatusOr<bool> renew(std::string_view policy, std::string_view app, std::string_view subject,
                       std::string_view lease);

  // POST /v1/<operation> for "charge", "refund", "reserve" (with `ttl`) or "settle" (with
  // `reservation`), docs/quotas.md: the decision with its balance (and reserve's reservation id).
  // Errors as try_acquire's; NotFound also for an unknown, settled or expired reservation.
  StatusOr<service::Decision> quota(std::string_view operation, std::string_view policy,
                                    std::string_view app, std::string_view subject,
                                    std::int64_t cost, std::string_view reservation = {},
                                    Micros ttl = 0);

  // GET /readyz: OK when the server and its store answer.
  Status ready();

  RemoteLimiterStats stats() const;

 private:
  class Impl;
  explicit RemoteLimiter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice
