// HttpServer: options checked and the TLS context made at start, the I/O threads and the
// accept loop (server/net/io_workers.h) handing each connection to connection.cc, and the
// graceful shutdown.
#include "sluice/server/http/server.h"

#include "sluice/core/connection_budget.h"
#include "sluice/core/status_macros.h"
#include "sluice/server/http/server_impl.h"
#include "sluice/server/http/tls_context.h"

namespace sluice::http {

Status HttpServer::Impl::start() {
  if (options_.max_header_bytes == 0 || options_.max_header_bytes > 0xffffffffu) {
    return invalid_argument("max_header_bytes: must be between 1 and 4294967295");
  }
  if (options_.read_timeout <= 0) return invalid_argument("read_timeout: must be positive");
  if (options_.max_buffered_body_bytes < options_.max_body_bytes) {
    return invalid_argument("max_buffered_body_bytes: must be at least max_body_bytes (" +
                            std::to_string(options_.max_body_bytes) + ")");
  }
  body_budget_ = std::make_shared<BodyBudget>(options_.max_buffered_body_bytes);
  if (options_.idle_timeout <= 0) return invalid_argument("idle_timeout: must be positive");
  if (options_.first_request_timeout <= 0) {
    return invalid_argument("first_request_timeout: must be positive");
  }
  if (options_.tls) {
    if (options_.tls_handshake_timeout <= 0) {
      return invalid_argument("tls_handshake_timeout: must be positive");
    }
    SLUICE_ASSIGN_OR_RETURN(tls_context_, make_tls_context(*options_.tls));
    if (options_.tls->hsts_max_age > 0) {
      hsts_ = "max-age=" + std::to_string(options_.tls->hsts_max_age / kMicrosPerSecond);
    }
  }
  caps_.set(options_.max_connections, options_.max_connections_per_peer,
            connection_budget(descriptor_limit(), /*with_grpc=*/false).http);
  if (options_.io_threads < 0) return invalid_argument("io_threads: must not be negative");
  if (options_.blocking_threads < 0) {
    return invalid_argument("blocking_threads: must not be negative");
  }
  SLUICE_RETURN_IF_ERROR(workers_.open(options_.io_threads == 0
                                           ? static_cast<int>(std::thread::hardware_concurrency())
                                           : options_.io_threads,
                                       options_.host, options_.port, "listen"));
  if (options_.blocking_threads > 0) {
    pool_.emplace(static_cast<std::size_t>(options_.blocking_threads));
  }
  Micros shortest =
      std::min({options_.read_timeout, options_.idle_timeout, options_.first_request_timeout});
  if (options_.tls) shortest = std::min(shortest, options_.tls_handshake_timeout);
  workers_.start(
      server::sweep_interval(shortest),
      [this](Worker& worker, tcp::socket socket) { accepted(worker, std::move(socket)); },
      [now = std::chrono::steady_clock::now](Connection& connection) { connection.expire(now()); });
  return Status();
}

void HttpServer::Impl::accepted(Worker& worker, tcp::socket socket) {
  auto connection = std::make_shared<Connection>(*this, worker, std::move(socket));
  if (!caps_.admit(worker.connections, connection->peer())) return;  // closes going out of scope
  connection->start();
}

void HttpServer::Impl::shutdown() {
  MutexLock lock(shutdown_mutex_);
  if (stopped_ || workers_.workers().empty()) return;
  stopped_ = true;
  workers_.drain(options_.shutdown_timeout, [this] { return caps_.open(); });
  workers_.join();
  if (pool_) pool_->join();
}

Status check_tls_options(const TlsOptions& tls) { return make_tls_context(tls).status(); }

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

StatusOr<std::unique_ptr<HttpServer>> HttpServer::start(HttpServerOptions options,
                                                        std::shared_ptr<const Router> router) {
  if (!router) return invalid_argument("router: must not be null");
  auto impl = std::make_unique<Impl>(std::move(options), std::move(router));
  SLUICE_RETURN_IF_ERROR(impl->start());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::uint16_t HttpServer::port() const { return impl_->port(); }

void HttpServer::shutdown() { impl_->shutdown(); }

std::size_t HttpServer::connections() const { return impl_->connections(); }

HttpServer::ConnectionStats HttpServer::connection_stats() const {
  return impl_->connection_stats();
}

std::size_t HttpServer::max_connections() const { return impl_->max_connections(); }

std::size_t HttpServer::max_connections_per_peer() const {
  return impl_->max_connections_per_peer();
}

}  // namespace sluice::http
