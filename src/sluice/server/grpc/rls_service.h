// RlsService: Envoy's RateLimitService/ShouldRateLimit as a protocol adapter over
// service::Limiter::decide, free of any transport: serialized request in, serialized response (or
// the call's error) out through a callback. Descriptor matching, charges and overrides are the
// limiter's resolution. grpc_server.cc carries it over HTTP/2; the decisions
// themselves are the limiter's, the mapping wire/rls_mapping.h's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/server/grpc/grpc_server.h"

namespace sluice::grpc_server {

class RlsService {
 public:
  // The limiter must outlive the service; it matches the descriptors (in the lookup it was
  // given).
  RlsService(service::Limiter& limiter, RlsOptions options)
      : limiter_(limiter), options_(options) {}

  // A serialized RateLimitResponse, or the call's status (never OK).
  using Reply = std::function<void(StatusOr<std::string>)>;

  // Decides `request` (a serialized RateLimitRequest). `timeout`: what is left of the caller's
  // deadline (grpc-timeout), which shortens each store call so the answer still arrives in time.
  // `reply` runs exactly once: before this returns when nothing must wait (bad input, the
  // in-memory store), else on a store or timer thread, where it must not block. Errors:
  // InvalidArgument naming the field (empty domain or descriptors, more than max_descriptors,
  // a bad hits_addend or override), Internal for bytes that do not parse, Unavailable when the
  // decisions would pass the limiter's pending bound (each descriptor counts, charges included)
  // or `client`'s share of it (the caller's address: DecisionRequest::client).
  void should_rate_limit(std::string_view request, std::optional<Micros> timeout,
                         std::string_view client, Reply reply) const;

  // The store bound for a call with `timeout` left (none: options.store_timeout): a tenth of it
  // (at least 2 ms) is kept back for the answer's trip, never below 1 ms nor above
  // options.store_timeout. Pure.
  static Micros store_timeout_for(std::optional<Micros> timeout, Micros store_timeout);

 private:
  // Decides `requests` (one call's) and answers `reply` once every one is decided.
  void decide(std::vector<service::DecisionRequest> requests, Reply reply) const;

  service::Limiter& limiter_;
  const RlsOptions options_;
};

}  // namespace sluice::grpc_server
