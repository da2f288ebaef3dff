// HttpServer's insides, shared by server.cc (start, accept, shutdown) and connection.cc (one
// client connection: reading, parsing, answering): the Impl behind the pimpl and its
// Connection. Internal to server/http — it includes Beast and Asio, which handlers and every
// other includer of server.h are spared.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/connection_budget.h"
#include "sluice/core/line_writer.h"
#include "sluice/core/mutex.h"
#include "sluice/server/http/server.h"
#include "sluice/server/net/connection_count.h"
#include "sluice/server/net/io_workers.h"

namespace sluice::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

using BeastRequest = bhttp::request<bhttp::string_body>;

inline std::chrono::microseconds micros(Micros value) { return std::chrono::microseconds(value); }

class HttpServer::Impl {
 public:
  class Connection;
  class ConnectionTransport;

  // The I/O threads and the accept loop (io_workers.h). Timeouts are deadlines checked by one
  // sweep timer per thread, so no request arms a timer of its own.
  using Workers = server::IoWorkers<Connection>;
  using Worker = Workers::Worker;

  Impl(HttpServerOptions options, std::shared_ptr<const Router> router)
      : options_(std::move(options)), router_(std::move(router)) {
    if (options_.access_log && !options_.access_log_sink) {
      default_log_ = std::make_unique<LineWriter>(options_.access_log_fd);
      options_.access_log_sink = [log = default_log_.get()](std::string_view line) {
        log->write(line);
      };
    }
  }

  ~Impl() { shutdown(); }

  Status start();
  void shutdown();
  std::uint16_t port() const { return workers_.port(); }
  std::size_t connections() const { return caps_.open(); }

  const HttpServerOptions& options() const { return options_; }
  const Router& router() const { return *router_; }
  bool draining() const { return workers_.draining(); }
  // Queues fn on the admin pool; false when there is none (the caller runs it).
  bool post_to_pool(std::function<void()>& fn) {
    if (!pool_) return false;
    asio::post(*pool_, std::move(fn));
    return true;
  }
  void opened(const std::string& peer) { caps_.opened(peer); }
  void closed(const std::string& peer) { caps_.closed(peer); }
  ConnectionStats connection_stats() const {
    return {.open = caps_.open(),
            .evicted = caps_.evicted(),
            .refused = caps_.refused(),
            .tls_handshake_failures = tls_failures_.load(),
            .accept_errors = workers_.accept_errors(),
            .access_log_dropped = default_log_ ? default_log_->dropped() : 0,
            .buffered_body_bytes = body_budget_ ? body_budget_->used() : 0,
            .body_budget_refusals = body_budget_ ? body_budget_->refusals() : 0};
  }
  const std::shared_ptr<BodyBudget>& body_budget() const { return body_budget_; }
  // Null: plain HTTP.
  asio::ssl::context* tls_context() const { return tls_context_.get(); }
  // The Strict-Transport-Security value for responses over TLS; empty: none.
  const std::string& hsts() const { return hsts_; }
  void tls_failed() { tls_failures_.fetch_add(1); }
  std::size_t max_connections() const { return caps_.max_total(); }
  std::size_t max_connections_per_peer() const { return caps_.max_per_peer(); }

 private:
  // A new connection on its worker's thread: admitted under the caps, then started.
  void accepted(Worker& worker, tcp::socket socket);

  HttpServerOptions options_;
  std::shared_ptr<const Router> router_;
  // The default access-log sink; declared before the threads so it outlives them.
  std::unique_ptr<LineWriter> default_log_;
  Workers workers_;
  std::optional<asio::thread_pool> pool_;
  server::ConnectionCaps caps_;
  std::atomic<std::uint64_t> tls_failures_{0};
  std::shared_ptr<asio::ssl::context> tls_context_;
  std::shared_ptr<BodyBudget> body_budget_;  // set by start(); shared with the bodies' charges
  std::string hsts_;
  Mutex shutdown_mutex_;
  bool stopped_ SLUICE_GUARDED_BY(shutdown_mutex_) = false;
};

// One client connection; every member is touched only on its worker's thread. Requests are
// parsed straight from the read buffer with Beast's parser (no composed read operations) and
// responses are serialised by hand into one buffer: one read and one write per request.
class HttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  Connection(Impl& server, Worker& worker, tcp::socket socket)
      : server_(server),
        worker_(worker),
        socket_(std::move(socket)),
        body_charge_(server.body_budget()) {
    error_code ec;
    const tcp::endpoint peer = socket_.remote_endpoint(ec);
    if (!ec) {
      peer_ = peer.address().to_string();
      remote_ = peer_ + ":" + std::to_string(peer.port());
    }
    socket_.set_option(tcp::no_delay(true), ec);
    if (asio::ssl::context* context = server_.tls_context()) {
      tls_.emplace(std::move(socket_), *context);
    }
  }

  void start() {
    worker_.connections.insert(this);
    server_.opened(peer_);
    idle_since_ = std::chrono::steady_clock::now();
    if (tls_) return handshake();
    next_request();
  }

  const std::string& peer() const { return peer_; }
  // Waiting for a request with nothing of it received: closing it loses nothing.
  bool idle() const { return !busy_ && !closed_; }
  TimePoint idle_since() const { return idle_since_; }

  // Drain: an idle connection closes now; a busy one after its response.
  void drain() {
    if (!busy_) close();
  }

  // Closes the connection when its deadline has passed (a stalled read or write, or idleness).
  void expire(TimePoint now) {
    if (now >= deadline_) close();
  }

  // Closes the socket and detaches the transport of a request still being answered.
  void close();

  asio::any_io_executor executor() { return tcp_socket().get_executor(); }
  Impl& server() { return server_; }
  // The transport of the request being answered, told when the connection closes.
  void answering_through(const std::shared_ptr<ConnectionTransport>& transport) {
    transport_ = transport;
  }

  void write(Response response);

 private:
  static constexpr TimePoint kNever = TimePoint::max();

  void close_socket() {
    if (closed_) return;
    closed_ = true;
    body_charge_.reset();
    worker_.connections.erase(this);
    server_.closed(peer_);
    // Over TLS without close_notify: every response states its length, so a cut after it
    // loses nothing, and waiting for the peer's close_notify would hold the descriptor.
    error_code ec;
    tcp_socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp_socket().close(ec);
  }

  void set_deadline(Micros timeout) {
    deadline_ = std::chrono::steady_clock::now() + micros(timeout);
  }
  tcp::socket& tcp_socket() { return tls_ ? tls_->next_layer() : socket_; }
  // Reads and writes go through TLS when it is on; everything else is the same.
  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& data, Handler&& handler) {
    if (tls_) return tls_->async_read_some(data, std::forward<Handler>(handler));
    socket_.async_read_some(data, std::forward<Handler>(handler));
  }
  template <typename Buffers, typename Handler>
  void async_write_all(const Buffers& data, Handler&& handler) {
    if (tls_) return asio::async_write(*tls_, data, std::forward<Handler>(handler));
    asio::async_write(socket_, data, std::forward<Handler>(handler));
  }
  void handshake();
  void next_request();
  void read_more();
  void on_read(error_code ec, std::size_t bytes);
  // Feeds buffered bytes to the parser; handles a complete request or reads more.
  void parse();
  // Answers a request that could not be read, then closes.
  void fail(const error_code& ec);
  void fail(int status, const std::string& detail, std::vector<Header> headers = {});
  // Charges the body budget for the body being read (see HttpServerOptions::
  // max_buffered_body_bytes); false when it does not fit.
  bool charge_body();
  // Refuses a message whose unparsed remainder outgrew its bound (see parse()).
  void fail_framing();
  // Beast's per-chunk callback (held by reference, so it lives here): counts extension bytes.
  void on_chunk_header(std::uint64_t size, beast::string_view extensions, error_code& ec);
  void handle(BeastRequest request);
  void on_written(error_code ec, bool keep_alive);

  Impl& server_;
  Worker& worker_;
  tcp::socket socket_;  // moved into tls_ when serving HTTPS
  std::optional<asio::ssl::stream<tcp::socket>> tls_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::function<void(std::uint64_t, beast::string_view, error_code&)> chunk_header_callback_ =
      [this](std::uint64_t size, beast::string_view extensions, error_code& ec) {
        on_chunk_header(size, extensions, ec);
      };
  std::size_t chunk_extension_bytes_ = 0;  // in the message being read
  BodyCharge body_charge_;                 // what the body being read holds of the budget
  bool body_sized_ = false;                // its Content-Length has been charged
  std::string head_;                       // the response's status line and headers
  std::string body_;
  std::string peer_ = "-";    // the client's address
  std::string remote_ = "-";  // address:port, for the access log
  TimePoint deadline_ = kNever;
  TimePoint idle_since_ = kNever;
  bool answered_once_ = false;  // a first request gets first_request_timeout
  bool busy_ = false;
  bool closed_ = false;
  bool continue_sent_ = false;
  // The request being answered, as the response and the access log need it.
  std::string method_;
  std::string path_;
  std::string request_id_;
  std::size_t bytes_in_ = 0;
  std::string route_ = "-";
  bool keep_alive_ = false;
  unsigned version_ = 11;
  std::int64_t started_ = 0;
  std::weak_ptr<ConnectionTransport> transport_;
};

}  // namespace sluice::http
