// One client connection of HttpServer (server_impl.h): TLS handshake, reading and parsing
// requests with Beast, the body budget, dispatching to the router, and writing responses
// (serialised by hand into one buffer) with the access-log line.
#include "sluice/server/http/server_impl.h"
#include "sluice/server/http/tls_context.h"
#include "sluice/wire/problem_json.h"

namespace sluice::http {
namespace {

constexpr std::size_t kFirstRead = 4096;
// Chunk extensions (";name=value" after a chunk size) carry nothing we use: at most this many
// bytes of them per message, so a body of tiny chunks cannot make a connection read without end.
constexpr std::size_t kMaxChunkExtensionBytes = 4096;
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

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

}  // namespace

// What an Exchange calls back into; keeps the connection alive while a handler runs. A handler
// may answer on any thread and at any time, even after the server shut down (a password hash on
// the admin API's work queue, a store's late answer): the connection detaches its transport when
// it closes, and every server closes its connections before its I/O contexts go, so a late call
// finds no connection and does nothing instead of touching freed I/O state. On the connection's
// own thread nothing can close it meanwhile; elsewhere the mutex holds close() back until the
// call has handed its work to that thread.
class HttpServer::Impl::ConnectionTransport final : public Transport {
 public:
  // Made on the connection's thread.
  explicit ConnectionTransport(const std::shared_ptr<Connection>& connection)
      : connection_(connection),
        io_(connection->executor()),
        io_thread_(std::this_thread::get_id()) {}

  void respond(Response response) override {
    if (responded_.exchange(true)) return;
    with_connection([&](std::shared_ptr<Connection>& connection) {
      // The last use: the write takes the transport's reference along.
      asio::dispatch(
          io_, [connection = std::move(connection), response = std::move(response)]() mutable {
            connection->write(std::move(response));
          });
    });
  }

  void after(std::chrono::microseconds delay, std::function<void()> fn) override {
    with_connection([&](std::shared_ptr<Connection>&) {
      auto timer = std::make_shared<asio::steady_timer>(io_, delay);
      timer->async_wait([timer, fn = std::move(fn)](error_code ec) {
        if (!ec) fn();
      });
    });
  }

  void offload(std::function<void()> fn) override {
    bool run_here = false;
    with_connection([&](std::shared_ptr<Connection>& connection) {
      run_here = !connection->server().post_to_pool(fn);
    });
    if (run_here) fn();  // no pool: on this thread, with no lock held (fn answers through us)
  }

  // The connection closed (on its thread): later calls do nothing. Returns the transport's
  // reference, which may be the last: the caller lets it go once it is done with the connection.
  [[nodiscard]] std::shared_ptr<Connection> detach() {
    MutexLock lock(mutex_);
    return std::move(connection_);
  }

 private:
  // Not analysed: the unlocked branch runs on the connection's own thread, where close() (the
  // only other writer of connection_) also runs, so it cannot race; the analysis cannot know.
  template <typename Fn>
  void with_connection(Fn&& fn) SLUICE_NO_THREAD_SAFETY_ANALYSIS {
    // Not io_.running_in_this_thread(): that reads the I/O context, which may be gone.
    if (std::this_thread::get_id() == io_thread_) {
      if (connection_) fn(connection_);
      return;
    }
    MutexLock lock(mutex_);
    if (connection_) fn(connection_);
  }

  Mutex mutex_;
  // Null once detached or answered.
  std::shared_ptr<Connection> connection_ SLUICE_GUARDED_BY(mutex_);
  asio::any_io_executor io_;  // used only while connection_ is set (the server is alive)
  std::thread::id io_thread_;
  std::atomic<bool> responded_{false};
};

void HttpServer::Impl::Connection::close() {
  std::shared_ptr<Connection> last_reference;  // may be the transport's: kept until closed
  if (std::shared_ptr<ConnectionTransport> transport = transport_.lock()) {
    last_reference = transport->detach();
  }
  close_socket();
}

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
  auto transport = std::make_shared<ConnectionTransport>(shared_from_this());
  answering_through(transport);
  auto exchange = std::make_shared<Exchange>(std::move(request), std::move(match.params),
                                             std::move(transport), std::move(body_charge));
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

// application/json, application/problem+json and the like, with or without parameters.
bool json_type(std::string_view content_type) {
  const std::string_view type = content_type.substr(0, content_type.find(';'));
  return type == "application/json" || type.ends_with("+json");
}

}  // namespace

void HttpServer::Impl::Connection::write(Response response) {
  if (closed_) return;
  const bool keep_alive = keep_alive_ && !response.close && !server_.draining();
  const int status = response.status;
  if (status == 204) response.body.clear();
  // Every JSON body ends its line, here for all of them (decisions, admin answers, problems, the
  // router's 404s), so a terminal's prompt and a line-reading client never meet a half line.
  if (!response.body.empty() && response.body.back() != '\n' && json_type(response.content_type)) {
    response.body.push_back('\n');
  }
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

}  // namespace sluice::http
