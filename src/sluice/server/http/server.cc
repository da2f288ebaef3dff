// The one translation unit of the server that includes Beast and Asio (slow to compile).
#include "sluice/server/http/server.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
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
#include "sluice/server/net/connection_count.h"
#include "sluice/server/net/io_workers.h"

namespace sluice::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

using BeastRequest = bhttp::request<bhttp::string_body>;

constexpr std::size_t kFirstRead = 4096;
// Chunk extensions (";name=value" after a chunk size) carry nothing we use: at most this many
// bytes of them per message, so a body of tiny chunks cannot make a connection read without end.
constexpr std::size_t kMaxChunkExtensionBytes = 4096;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

std::chrono::microseconds micros(Micros value) { return std::chrono::microseconds(value); }

std::int64_t steady_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The Date header, formatted once per second per thread.
const std::string& http_date() {
  thread_local std::time_t cached_second = 0;
  thread_local std::string cached;
  const std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    cached_second = now;
    std::tm utc{};
    gmtime_r(&now, &utc);
    char text[64];
    const std::size_t n = std::strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &utc);
    cached.assign(text, n);
  }
  return cached;
}

// The reason OpenSSL gives for the last failure (the asio error_code's message is often only
// "asio.ssl error").
std::string openssl_reason(const error_code& ec) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return ec.message();
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// A readable file, or an error naming the setting and the reason (before OpenSSL, whose reasons
// for a missing file are obscure).
Status readable(std::string_view setting, const std::string& path) {
  if (path.empty()) return invalid_argument(std::string(setting) + ": must name a PEM file");
  std::ifstream file(path);
  if (!file) {
    return invalid_argument(std::string(setting) + " " + path +
                            ": cannot be read: " + std::strerror(errno));
  }
  return Status();
}

// TLS 1.2 and later; for TLS 1.2 only ECDHE key exchange with AEAD ciphers (TLS 1.3's suites
// are all of that kind already); no compression, no renegotiation.
StatusOr<std::shared_ptr<asio::ssl::context>> make_tls_context(const TlsOptions& tls) {
  if (Status status = readable("tls_cert", tls.cert_file); !status.ok()) return status;
  if (Status status = readable("tls_key", tls.key_file); !status.ok()) return status;
  if (!tls.client_ca_file.empty()) {
    if (Status status = readable("tls_client_ca", tls.client_ca_file); !status.ok()) return status;
  }
  if (tls.hsts_max_age < 0) return invalid_argument("hsts_max_age: must not be negative");
  ERR_clear_error();
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX* native = context->native_handle();
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  SSL_CTX_set_options(
      native, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_cipher_list(native,
                          "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                          "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  error_code ec;
  if (context->use_certificate_chain_file(tls.cert_file, ec); ec) {
    return invalid_argument("tls_cert " + tls.cert_file +
                            ": not a PEM certificate chain: " + openssl_reason(ec));
  }
  context->use_private_key_file(tls.key_file, asio::ssl::context::pem, ec);
  // Asio took OpenSSL's error code off its queue into `ec`.
  const bool mismatch =
      ec && ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
  if (ec && !mismatch) {
    return invalid_argument("tls_key " + tls.key_file +
                            ": not an unencrypted PEM private key: " + openssl_reason(ec));
  }
  if (ec || SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return invalid_argument("tls_key " + tls.key_file + ": does not match the certificate in " +
                            tls.cert_file);
  }
  if (!tls.client_ca_file.empty()) {
    if (context->load_verify_file(tls.client_ca_file, ec); ec) {
      return invalid_argument("tls_client_ca " + tls.client_ca_file +
                              ": not a PEM CA certificate: " + openssl_reason(ec));
    }
    // Tell clients which CAs are accepted, so they pick the right certificate.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (names == nullptr) {
      ERR_clear_error();
      return invalid_argument("tls_client_ca " + tls.client_ca_file + ": holds no certificate");
    }
    SSL_CTX_set_client_CA_list(native, names);
    context->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
  }
  ERR_clear_error();
  return context;
}

}  // namespace

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
      stderr_log_ = std::make_unique<LineWriter>(STDERR_FILENO);
      options_.access_log_sink = [log = stderr_log_.get()](std::string_view line) {
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
  void offload(std::function<void()> fn) {
    if (pool_) {
      asio::post(*pool_, std::move(fn));
    } else {
      fn();
    }
  }
  void opened(const std::string& peer) { caps_.opened(peer); }
  void closed(const std::string& peer) { caps_.closed(peer); }
  ConnectionStats connection_stats() const {
    return {.open = caps_.open(),
            .evicted = caps_.evicted(),
            .refused = caps_.refused(),
            .tls_handshake_failures = tls_failures_.load(),
            .accept_errors = workers_.accept_errors(),
            .access_log_dropped = stderr_log_ ? stderr_log_->dropped() : 0,
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
  std::unique_ptr<LineWriter> stderr_log_;
  Workers workers_;
  std::optional<asio::thread_pool> pool_;
  server::ConnectionCaps caps_;
  std::atomic<std::uint64_t> tls_failures_{0};
  std::shared_ptr<asio::ssl::context> tls_context_;
  std::shared_ptr<BodyBudget> body_budget_;  // set by start(); shared with the bodies' charges
  std::string hsts_;
  std::mutex shutdown_mutex_;
  bool stopped_ = false;
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

  void close() {
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

  asio::any_io_executor executor() { return tcp_socket().get_executor(); }
  Impl& server() { return server_; }

  void write(Response response);

 private:
  static constexpr TimePoint kNever = TimePoint::max();

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
};

// What an Exchange calls back into; keeps the connection alive while a handler runs.
class HttpServer::Impl::ConnectionTransport final : public Transport {
 public:
  explicit ConnectionTransport(std::shared_ptr<Connection> connection)
      : connection_(std::move(connection)) {}

  void respond(Response response) override {
    if (responded_.exchange(true)) return;
    asio::dispatch(connection_->executor(),
                   [connection = connection_, response = std::move(response)]() mutable {
                     connection->write(std::move(response));
                   });
  }

  void after(std::chrono::microseconds delay, std::function<void()> fn) override {
    auto timer = std::make_shared<asio::steady_timer>(connection_->executor(), delay);
    timer->async_wait([timer, fn = std::move(fn)](error_code ec) {
      if (!ec) fn();
    });
  }

  void offload(std::function<void()> fn) override { connection_->server().offload(std::move(fn)); }

 private:
  std::shared_ptr<Connection> connection_;
  std::atomic<bool> responded_{false};
};

void HttpServer::Impl::Connection::next_request() {
  busy_ = false;
  if (closed_) return;
  if (server_.draining()) return close();
  parser_.reset();
  if (buffer_.size() > 0) return parse();  // a pipelined request is already here
  const HttpServerOptions& options = server_.options();
  set_deadline(answered_once_ ? options.idle_timeout
                              : std::min(options.first_request_timeout, options.idle_timeout));
  idle_since_ = std::chrono::steady_clock::now();
  read_more();
}

void HttpServer::Impl::Connection::handshake() {
  // Counted like a connection that has sent nothing: evictable at a cap, and bounded in time.
  set_deadline(server_.options().tls_handshake_timeout);
  tls_->async_handshake(asio::ssl::stream_base::server, [self = shared_from_this()](error_code ec) {
    if (ec) {
      self->server_.tls_failed();
      return self->close();
    }
    self->next_request();
  });
}

void HttpServer::Impl::Connection::read_more() {
  async_read_some(
      buffer_.prepare(kFirstRead),
      [self = shared_from_this()](error_code ec, std::size_t bytes) { self->on_read(ec, bytes); });
}

void HttpServer::Impl::Connection::on_read(error_code ec, std::size_t bytes) {
  if (ec) {
    // Closed by the sweep while a request was arriving: the read timeout.
    return close();
  }
  buffer_.commit(bytes);
  parse();
}

void HttpServer::Impl::Connection::parse() {
  if (!parser_) {
    busy_ = true;
    continue_sent_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options().max_header_bytes));
    parser_->body_limit(server_.options().max_body_bytes);
    // Not eager until the headers are in: put() then stops after them, so the body is charged
    // to the budget (charge_body) before Beast reserves its Content-Length.
    parser_->eager(false);
    parser_->on_chunk_header(chunk_header_callback_);
    chunk_extension_bytes_ = 0;
    body_sized_ = false;
    set_deadline(server_.options().read_timeout);
  }
  while (buffer_.size() > 0 && !parser_->is_done()) {
    error_code ec;
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec && ec != bhttp::error::need_more) return fail(ec);
    // After every step, so a chunked body that grows is charged before the next read.
    if (parser_->is_header_done() && !charge_body()) {
      return fail(503,
                  "request bodies held in memory have reached max_buffered_body_bytes (" +
                      std::to_string(server_.options().max_buffered_body_bytes) +
                      " bytes); retry shortly",
                  {{"Retry-After", "1"}});
    }
    if (ec == bhttp::error::need_more) {
      // What Beast leaves unconsumed is one incomplete element it parses only whole: the request
      // line and headers, a chunk-size line with its extensions, or the trailer section. Body
      // bytes are consumed as they arrive (eager) and bounded by body_limit. So bounding that
      // remainder bounds every byte a connection buffers, for the whole message.
      if (buffer_.size() > server_.options().max_header_bytes) {
        if (!parser_->is_header_done()) return fail(bhttp::error::header_limit);
        return fail_framing();
      }
      break;
    }
  }
  if (parser_->is_done()) return handle(parser_->release());
  if (parser_->is_header_done() && !continue_sent_) {
    continue_sent_ = true;
    const auto& header = parser_->get();
    const auto expect = header.find(bhttp::field::expect);
    if (expect != header.end() && beast::iequals(expect->value(), "100-continue")) {
      async_write_all(asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code ec, std::size_t) {
                        if (ec) return self->close();
                        self->read_more();
                      });
      return;
    }
  }
  read_more();
}

bool HttpServer::Impl::Connection::charge_body() {
  std::size_t held = parser_->get().body().capacity();
  if (!body_sized_) {
    body_sized_ = true;
    parser_->eager(true);
    if (const auto length = parser_->content_length()) {
      held = std::max(held, static_cast<std::size_t>(*length));  // ≤ body_limit, checked by Beast
    }
  }
  const std::size_t small = server_.options().small_body_bytes;
  return body_charge_.grow_to(held > small ? held - small : 0);
}

void HttpServer::Impl::Connection::on_chunk_header(std::uint64_t /*size*/,
                                                   beast::string_view extensions, error_code& ec) {
  chunk_extension_bytes_ += extensions.size();
  if (chunk_extension_bytes_ > kMaxChunkExtensionBytes) ec = bhttp::error::bad_chunk_extension;
}

void HttpServer::Impl::Connection::fail_framing() {
  const std::string limit = std::to_string(server_.options().max_header_bytes) + " bytes";
  // Beast parses the last chunk together with the trailer section, so the remainder tells which
  // one outgrew the limit: a complete zero-size line is followed by trailer fields.
  const auto* data = static_cast<const char*>(buffer_.data().data());
  const std::string_view rest(data, buffer_.size());
  const std::size_t digits = rest.find_first_not_of('0');
  const std::size_t line_end = rest.find("\r\n");
  if (digits > 0 && digits != std::string_view::npos && line_end != std::string_view::npos &&
      (rest[digits] == '\r' || rest[digits] == ';')) {
    return fail(431, "trailer section exceeds " + limit);
  }
  fail(400, "chunk-size line (with its extensions) exceeds " + limit);
}

void HttpServer::Impl::Connection::fail(const error_code& ec) {
  if (ec == bhttp::error::header_limit) {
    return fail(431, "request line and headers exceed " +
                         std::to_string(server_.options().max_header_bytes) + " bytes");
  }
  if (ec == bhttp::error::body_limit) {
    return fail(
        413, "request body exceeds " + std::to_string(server_.options().max_body_bytes) + " bytes");
  }
  if (ec == bhttp::error::bad_chunk_extension && chunk_extension_bytes_ > kMaxChunkExtensionBytes) {
    return fail(400, "chunk extensions exceed " + std::to_string(kMaxChunkExtensionBytes) +
                         " bytes in one message");
  }
  fail(400, "malformed HTTP request: " + ec.message());
}

void HttpServer::Impl::Connection::fail(int status, const std::string& detail,
                                        std::vector<Header> headers) {
  method_ = "-";
  path_ = "-";
  request_id_ = new_request_id();
  bytes_in_ = 0;
  route_ = "-";
  keep_alive_ = false;
  version_ = 11;
  started_ = steady_micros();
  Response response = problem_response(status, detail);
  response.headers = std::move(headers);
  response.close = true;
  write(std::move(response));
}

void HttpServer::Impl::Connection::handle(BeastRequest beast_request) {
  // The body's charge goes with it: to the exchange, or away with it at the end of this call.
  BodyCharge body_charge = std::exchange(body_charge_, BodyCharge(server_.body_budget()));
  deadline_ = kNever;  // the handler may wait (a store call, a timer): no read timeout now
  answered_once_ = true;
  started_ = steady_micros();
  keep_alive_ = beast_request.keep_alive();
  version_ = beast_request.version();
  Request request;
  request.method = std::string(beast_request.method_string());
  request.target = std::string(beast_request.target());
  const std::size_t question = request.target.find('?');
  request.path = request.target.substr(0, question);
  if (question != std::string::npos) request.query = request.target.substr(question + 1);
  request.headers.reserve(8);
  for (const auto& field : beast_request) {
    request.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  request.body = std::move(beast_request.body());
  request.remote = remote_;
  const std::optional<std::string_view> id = request.header("X-Request-Id");
  request.request_id = id && acceptable_request_id(*id) ? std::string(*id) : new_request_id();
  method_ = request.method;
  path_ = request.path;
  request_id_ = request.request_id;
  bytes_in_ = request.body.size();

  Router::Match match = server_.router().match(request.method, request.path);
  route_ = match.route.empty() ? "-" : std::string(match.route);
  if (match.handler == nullptr) {
    if (match.status == 405) {
      Response response =
          problem_response(405, "method " + method_ + " is not allowed on " + path_);
      response.headers.push_back({"Allow", match.allow});
      return write(std::move(response));
    }
    return write(problem_response(404, "no such endpoint: " + path_));
  }
  auto exchange = std::make_shared<Exchange>(
      std::move(request), std::move(match.params),
      std::make_shared<ConnectionTransport>(shared_from_this()), std::move(body_charge));
  try {
    (*match.handler)(exchange);
  } catch (const std::exception& e) {
    exchange->respond(problem_response(500, std::string("internal error: ") + e.what()));
  }
}

namespace {

bool header_safe(std::string_view text) {
  // A plain loop: find_first_of with a two-byte set calls memchr once per byte of `text` (5 % of
  // a /v1/check's CPU in perf).
  return std::none_of(text.begin(), text.end(), [](char c) { return c == '\r' || c == '\n'; });
}

}  // namespace

void HttpServer::Impl::Connection::write(Response response) {
  if (closed_) return;
  const bool keep_alive = keep_alive_ && !response.close && !server_.draining();
  const int status = response.status;
  if (status == 204) response.body.clear();
  head_.clear();
  head_.append(version_ == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  head_.append(std::to_string(status)).push_back(' ');
  head_.append(wire::reason_phrase(status)).append("\r\nDate: ").append(http_date());
  if (!response.content_type.empty()) {
    head_.append("\r\nContent-Type: ").append(response.content_type);
  }
  if (status != 204) {  // RFC 9110 §8.6: a 204 carries no Content-Length
    head_.append("\r\nContent-Length: ").append(std::to_string(response.body.size()));
  }
  head_.append("\r\nX-Request-Id: ").append(request_id_);
  // Every answer says what it is: no browser sniffs a JSON body (or a reflected value in it)
  // into HTML or script.
  head_.append("\r\nX-Content-Type-Options: nosniff");
  if (tls_ && !server_.hsts().empty()) {
    head_.append("\r\nStrict-Transport-Security: ").append(server_.hsts());
  }
  for (const Header& header : response.headers) {
    if (!header_safe(header.name) || !header_safe(header.value)) continue;
    if (iequals(header.name, "X-Content-Type-Options")) continue;  // sent above, once
    head_.append("\r\n").append(header.name).append(": ").append(header.value);
  }
  if (!keep_alive) {
    head_.append("\r\nConnection: close");
  } else if (version_ == 10) {
    head_.append("\r\nConnection: keep-alive");
  }
  head_.append("\r\n\r\n");
  body_ = std::move(response.body);

  const Micros duration = steady_micros() - started_;
  const HttpServerOptions& options = server_.options();
  if (options.on_response) options.on_response(route_, status, duration);
  if (options.access_log) {
    options.access_log_sink(access_log_line({.request_id = request_id_,
                                             .remote = remote_,
                                             .method = method_,
                                             .path = path_,
                                             .route = route_,
                                             .status = status,
                                             .bytes_in = bytes_in_,
                                             .bytes_out = body_.size(),
                                             .duration_us = duration,
                                             .unix_micros = SystemClock::instance().now()}));
  }
  busy_ = true;
  set_deadline(options.read_timeout);
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head_), asio::buffer(body_)};
  async_write_all(buffers, [self = shared_from_this(), keep_alive](error_code ec, std::size_t) {
    self->on_written(ec, keep_alive);
  });
}

void HttpServer::Impl::Connection::on_written(error_code ec, bool keep_alive) {
  if (ec || !keep_alive) return close();
  next_request();
}

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
    StatusOr<std::shared_ptr<asio::ssl::context>> context = make_tls_context(*options_.tls);
    if (!context.ok()) return context.status();
    tls_context_ = std::move(*context);
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
  if (Status opened = workers_.open(options_.io_threads == 0
                                        ? static_cast<int>(std::thread::hardware_concurrency())
                                        : options_.io_threads,
                                    options_.host, options_.port, "listen");
      !opened.ok()) {
    return opened;
  }
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
  std::lock_guard lock(shutdown_mutex_);
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
  if (Status status = impl->start(); !status.ok()) return status;
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
