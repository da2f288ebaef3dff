// GrpcServer: `sluice serve --grpc-listen` (docs/envoy.md). gRPC over HTTP/2 (h2c, prior
// knowledge) on libnghttp2 and Boost.Asio, with protobuf for the messages:
//   - envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, a thin adapter over
//     service::Limiter (rls_service.h) — no I/O thread ever waits for a decision;
//   - grpc.health.v1.Health Check and Watch (SERVING / NOT_SERVING as set_serving says);
//   - grpc.reflection.v1alpha.ServerReflection (when options.reflection).
// Every resource a client can make the server hold is bounded by GrpcServerOptions: connections
// in total and per client address, the time to the HTTP/2 preface and between calls, header
// list size (counted while a header block accumulates), streams at once and per connection's
// life, the time a request may take to arrive, message size, descriptors per call, request bytes
// buffered, and bytes queued for a client that does not read. docs/security/grpc.md has the
// defaults and the memory each bounds. No gRPC or nghttp2 type appears here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sluice/service/limiter.h"
#include "sluice/status.h"
#include "sluice/wire/rls_mapping.h"

namespace sluice::grpc_server {

struct RlsOptions {
  wire::RlsHeaders headers = wire::RlsHeaders::kNone;
  // Bound on each store call when the caller set no deadline (Envoy always sets one: the
  // filter's timeout, 20 ms by default). A caller's deadline shortens it, never lengthens it.
  Micros store_timeout = kMicrosPerSecond;
  // Descriptors one ShouldRateLimit may carry (HTTP's batch cap); above: INVALID_ARGUMENT.
  std::size_t max_descriptors = 1000;
};

struct GrpcServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: pick a free one (see port())
  int io_threads = 1;      // threads serving connections (each connection lives on one)
  // Largest request message accepted; above: RESOURCE_EXHAUSTED before its payload is read.
  std::int64_t max_message_bytes = std::int64_t{4} * 1024 * 1024;
  // Streams (calls) open at once on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS);
  // nghttp2 refuses the ones above it.
  std::int64_t max_concurrent_streams = 100;
  // Open connections at most, and from one client address at most (0: half of
  // max_connections). At a cap a new connection replaces the one idle longest (no stream open),
  // or is closed at once when none is idle. max_connections 0: a quarter of the descriptor limit
  // (RLIMIT_NOFILE) less 128, between 16 and 1024 — 1024 at Debian's usual 20 000 or more, 224
  // under `ulimit -n 1024` — so this port alone cannot take every descriptor.
  std::size_t max_connections = 0;
  std::size_t max_connections_per_peer = 0;
  // A new connection must send the HTTP/2 preface and its SETTINGS within this.
  Micros handshake_timeout = 5 * kMicrosPerSecond;
  // A connection with no stream open for this long is sent GOAWAY and closed; so is one whose
  // queued output has not moved for this long (a client that does not read).
  Micros idle_timeout = 60 * kMicrosPerSecond;
  // A stream whose request (headers and every message, up to END_STREAM) has not arrived within
  // this is reset (RST_STREAM CANCEL). Also bounds a reflection stream the client keeps open.
  Micros stream_timeout = 10 * kMicrosPerSecond;
  // A connection older than this is sent GOAWAY: calls in flight finish, new ones go to a new
  // connection (clients reconnect on their own). 0: no age limit.
  Micros max_connection_age = 0;
  // Request header list (HPACK-decoded names + values + 32 per field, as
  // SETTINGS_MAX_HEADER_LIST_SIZE counts) and the encoded header block, while it accumulates;
  // above: the connection is closed (GOAWAY).
  std::size_t max_header_list_bytes = std::size_t{16} * 1024;
  // Request bytes held for unfinished messages, per connection and across the server; a stream
  // that would pass either is reset (RESOURCE_EXHAUSTED).
  std::size_t max_connection_buffer_bytes = std::size_t{4} * 1024 * 1024;
  std::size_t max_buffered_bytes = std::size_t{64} * 1024 * 1024;
  // Bytes queued for a connection's socket; above it the server stops reading that connection
  // (no new calls) until the client reads. Also the most a stream may have waiting behind the
  // client's flow-control window beyond one message: past it the stream is reset.
  std::size_t max_outbound_bytes = std::size_t{64} * 1024;
  // Serve grpc.reflection.v1alpha (lists the services and their proto files to anyone who can
  // reach the port).
  bool reflection = true;
  Micros shutdown_timeout = 5 * kMicrosPerSecond;  // shutdown()'s default grace
  RlsOptions rls;
};

class GrpcServer {
 public:
  // Starts serving; the limiter (which matches the descriptors in its own lookup) must outlive
  // the server. Health starts SERVING.
  // Errors: InvalidArgument naming the option, Unavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<GrpcServer>> start(GrpcServerOptions options,
                                                     service::Limiter& limiter);
  ~GrpcServer();  // shutdown()
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  std::uint16_t port() const;
  // What grpc.health.v1.Health answers, for the server ("") and the RLS service; Watch streams
  // get the change. Thread-safe.
  void set_serving(bool serving);
  // Health turns NOT_SERVING, the listener closes, connections get GOAWAY and calls in flight
  // finish (up to `grace`), then the rest are cut and the threads stop. Idempotent.
  void shutdown(Micros grace = 5 * kMicrosPerSecond);

  struct Stats {
    std::size_t connections = 0;         // open now
    std::uint64_t refused = 0;           // closed at a connection cap with none idle to replace
    std::uint64_t evicted = 0;           // idle connections closed to admit a new one
    std::uint64_t accept_errors = 0;     // failed accepts (EMFILE, ENFILE, ...), each retried
    std::uint64_t timed_out = 0;         // closed for the handshake, idle or write timeout
    std::uint64_t header_overflows = 0;  // closed for a header block over its bound
    std::uint64_t streams_reset = 0;     // streams reset by the server (deadline, buffers)
  };
  Stats stats() const;

 private:
  struct State;
  explicit GrpcServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace sluice::grpc_server
