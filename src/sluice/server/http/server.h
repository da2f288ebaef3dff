// HttpServer: the HTTP/1.1 server under `sluice serve`, on Boost.Beast/Asio (pimpl: only
// server_impl.h and tls_context.h include them). One io_context per I/O thread; one acceptor
// hands connections out round-robin, and each connection then lives on one thread (no locks, no
// strands). Keep-alive, Expect: 100-continue, limits on header and body size (431 / 413 with
// problem+json), an idle timeout between requests and a read timeout per request, one memory budget
// for the request bodies of all connections (max_buffered_body_bytes), a JSON access-log line per
// request with its X-Request-Id (echoed or generated), and graceful shutdown: stop accepting,
// finish in-flight requests, close idle connections. Optionally HTTPS (OpenSSL through Asio):
// TLS 1.2 and later, forward-secret AEAD ciphers, optional client certificates, and HSTS on every
// response over TLS. Every response says X-Content-Type-Options: nosniff.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/server/http/router.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::http {

// HTTPS: PEM files read once at start; a file that cannot be read, a key that does not match the
// certificate, or a CA file without a certificate fails start() naming the setting.
struct TlsOptions {
  std::string cert_file;       // the server's certificate, then any intermediates (tls_cert)
  std::string key_file;        // its private key, unencrypted (tls_key)
  std::string client_ca_file;  // empty: no client certificate asked; else one signed by these
                               // CAs is required, or the handshake fails (tls_client_ca)
  // Strict-Transport-Security max-age on every response over TLS; 0: no header.
  Micros hsts_max_age = Micros{365} * 24 * 3600 * kMicrosPerSecond;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IPv4/IPv6 address or a name resolved once at start
  std::uint16_t port = 8080;       // 0: any free port (see HttpServer::port())
  int io_threads = 0;              // 0: one per core
  // Threads for Exchange::offload (handlers whose store calls block, e.g. Redis). 0: offloaded
  // work runs on the I/O thread at once (right for the in-memory store).
  int blocking_threads = 0;
  std::size_t max_header_bytes = std::size_t{16} * 1024;  // request line + headers; above: 431
  std::size_t max_body_bytes = std::size_t{1024} * 1024;  // above: 413
  // Request bodies held in memory at once, across every connection, beyond each body's first
  // small_body_bytes (issue 32 M8: 3 000 slow 1 MiB bodies held 3 GB). A body is charged its
  // Content-Length when its headers are in (before any of it is buffered), or its size as a
  // chunked body grows, and holds the charge until its handler is done with it. One that does
  // not fit gets 503 with Retry-After and the connection closes. At least max_body_bytes.
  std::size_t max_buffered_body_bytes = std::size_t{64} * 1024 * 1024;
  // Bodies up to this size never wait for that budget, so small requests (decisions, logins)
  // are answered however many large bodies hold it; the memory this leaves out is at most
  // max_connections × small_body_bytes.
  std::size_t small_body_bytes = std::size_t{8} * 1024;
  Micros read_timeout = 10 * kMicrosPerSecond;      // first byte to last byte of a request; writes
  Micros idle_timeout = 60 * kMicrosPerSecond;      // keep-alive connection waiting for a request
  Micros shutdown_timeout = 10 * kMicrosPerSecond;  // graceful drain; then connections are cut
  // A new connection that has sent nothing yet waits at most this long (and never longer than
  // idle_timeout): idle sockets opened only to hold descriptors go quickly.
  Micros first_request_timeout = 5 * kMicrosPerSecond;
  // Open connections at most. At the cap a new connection takes the place of the one that has
  // been idle longest on its I/O thread, or is closed at once when none there is idle, so the
  // server keeps answering whoever holds connections. 0: the descriptor limit (RLIMIT_NOFILE)
  // less 128 for Redis, SQL and files, at least 16.
  std::size_t max_connections = 0;
  // Open connections from one client address at most, by the same rule among its own
  // connections. 0: half of max_connections. Raise it behind a proxy that is one address for all.
  std::size_t max_connections_per_peer = 0;
  // Set: serve HTTPS only on this port (plain HTTP is refused by the TLS handshake).
  std::optional<TlsOptions> tls;
  // A new TLS connection must finish its handshake within this (and then send its first request
  // within first_request_timeout), so half-open handshakes cannot hold descriptors.
  Micros tls_handshake_timeout = 5 * kMicrosPerSecond;
  bool access_log = true;
  // Where the default sink writes: stderr, or a file the caller opened (and keeps open while the
  // server runs).
  int access_log_fd = STDERR_FILENO;
  // Receives each access-log line (without newline), on an I/O thread. Default: access_log_fd
  // through a LineWriter (core/line_writer.h): batched writes by a thread of its own, at most
  // ~50 ms late, lines dropped and counted when the fd does not keep up.
  std::function<void(std::string_view line)> access_log_sink;
  // Called for every response (route pattern or "-" when none matched), on an I/O thread.
  std::function<void(std::string_view route, int status, Micros duration)> on_response;
};

// Loads the files of `tls` as start() would, and reports the first problem (naming the setting:
// tls_cert, tls_key or tls_client_ca, and the reason); lets a command refuse before it opens
// anything else.
Status check_tls_options(const TlsOptions& tls);

class HttpServer {
 public:
  // Binds, listens and starts the threads. Errors: InvalidArgument (bad options), Unavailable
  // (cannot bind/listen, with the reason). `router` must not change while serving.
  static StatusOr<std::unique_ptr<HttpServer>> start(HttpServerOptions options,
                                                     std::shared_ptr<const Router> router);

  // shutdown() if still serving.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the chosen one when options.port was 0).
  std::uint16_t port() const;

  // Graceful shutdown: stops accepting, lets requests already received finish (their responses
  // carry Connection: close), closes idle connections; after shutdown_timeout cuts the rest.
  // Returns once every thread has stopped. Idempotent; thread-safe; not from an I/O thread.
  void shutdown();

  struct ConnectionStats {
    std::size_t open = 0;       // right now
    std::uint64_t evicted = 0;  // idle connections closed to admit a new one at a cap
    std::uint64_t refused = 0;  // new connections closed at a cap with none idle to replace
    std::uint64_t tls_handshake_failures = 0;  // refused, broken or timed-out TLS handshakes
    // Accepts that failed (out of descriptors and the like); the port is asked again after a
    // pause, and one waiting client is closed at once (server/net/io_workers.h).
    std::uint64_t accept_errors = 0;
    // Access-log lines dropped because their fd did not keep up (LineWriter's bound).
    std::uint64_t access_log_dropped = 0;
    // Request-body bytes held against max_buffered_body_bytes now, and bodies refused at it.
    std::size_t buffered_body_bytes = 0;
    std::uint64_t body_budget_refusals = 0;
  };
  ConnectionStats connection_stats() const;
  // Connections open right now.
  std::size_t connections() const;
  // The caps in force (0s resolved at start).
  std::size_t max_connections() const;
  std::size_t max_connections_per_peer() const;

 private:
  class Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::http
