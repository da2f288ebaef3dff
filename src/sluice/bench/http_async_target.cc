#include "sluice/bench/http_async_target.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "sluice/client/remote_limiter.h"
#include "sluice/core/json_text.h"
#include "sluice/core/mutex.h"
#include "sluice/wire/decision_json.h"

namespace sluice::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

constexpr std::size_t kMaxResponseBytes = 64 * 1024;

// One keep-alive connection and the request it carries (at most one at a time). Its handlers run
// on its strand, so its stream and timer never race whichever thread the loop runs on.
struct Connection {
  explicit Connection(asio::io_context& io) : stream(asio::make_strand(io)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bhttp::request<bhttp::string_body> request;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  Target::OutcomeCallback done;
  bool connected = false;
};

class AsyncHttpTarget final : public Target {
 public:
  AsyncHttpTarget(const HttpTargetOptions& options, const HttpUrl& url)
      : options_(options), guard_(asio::make_work_guard(io_)) {
    host_header_ = url.host + ":" + std::to_string(url.port);
    tcp::resolver resolver(io_);
    error_code ec;
    endpoints_ = resolver.resolve(url.host, std::to_string(url.port), ec);
    // The head every request shares; the body is the subject's own.
    body_prefix_ = "{\"app\":";
    append_json_string(body_prefix_, options.app);
    body_prefix_ += ",\"policy\":";
    append_json_string(body_prefix_, options.policy);
    body_prefix_ += ",\"cost\":" + std::to_string(options.cost) + ",\"key\":";
    thread_ = std::thread([this] { io_.run(); });
  }

  ~AsyncHttpTarget() override {
    guard_.reset();
    io_.stop();
    thread_.join();
  }

  void prepare_async(int callers) override {
    MutexLock lock(mu_);
    while (all_.size() < static_cast<std::size_t>(callers)) {
      Connection& connection = add_connection();
      error_code ec;
      // A blocking connect before the clock starts: no handler is pending on this stream yet.
      asio::connect(connection.stream.socket(), endpoints_, ec);
      if (!ec) {
        connection.stream.socket().set_option(tcp::no_delay(true), ec);
        connection.connected = true;
      }
      idle_.push_back(&connection);
    }
  }

  Outcome decide(std::string_view subject) override {
    // Blocking callers (closed and open loop) are not what this target is for; serve them all
    // the same, through the loop.
    std::promise<Outcome> answer;
    decide_async(subject, [&answer](Outcome outcome) { answer.set_value(outcome); });
    return answer.get_future().get();
  }

  void decide_async(std::string_view subject, OutcomeCallback done) override {
    std::string body = body_prefix_;
    append_json_string(body, subject);
    body.push_back('}');
    Connection* connection = nullptr;
    {
      MutexLock lock(mu_);
      // Without prepare_async (a blocking caller), the first request opens a connection.
      if (all_.empty()) idle_.push_back(&add_connection());
      if (idle_.empty()) {
        // More callers than prepared connections: the request waits for one.
        waiting_.push_back({std::move(body), std::move(done)});
        return;
      }
      connection = idle_.back();
      idle_.pop_back();
    }
    send(*connection, std::move(body), std::move(done));
  }

  std::string first_error() const override { return first_error_.text(); }

 private:
  struct Waiting {
    std::string body;
    OutcomeCallback done;
  };

  // A new connection, not connected yet.
  Connection& add_connection() SLUICE_REQUIRES(mu_) {
    auto connection = std::make_unique<Connection>(io_);
    connection->request = {bhttp::verb::post, "/v1/acquire", 11};
    connection->request.set(bhttp::field::host, host_header_);
    connection->request.set(bhttp::field::content_type, "application/json");
    connection->request.keep_alive(true);
    all_.push_back(std::move(connection));
    return *all_.back();
  }

  void send(Connection& connection, std::string body, OutcomeCallback done) {
    connection.done = std::move(done);
    connection.request.body() = std::move(body);
    connection.request.prepare_payload();
    asio::dispatch(connection.stream.get_executor(), [this, &connection] {
      if (!connection.connected) return reconnect(connection);
      write(connection);
    });
  }

  void reconnect(Connection& connection) {
    connection.stream.expires_after(std::chrono::microseconds(options_.connect_timeout));
    connection.stream.async_connect(endpoints_, [this, &connection](error_code ec, const auto&) {
      if (ec) return finish(connection, ec, "connect");
      error_code ignored;
      connection.stream.socket().set_option(tcp::no_delay(true), ignored);
      connection.connected = true;
      write(connection);
    });
  }

  void write(Connection& connection) {
    connection.stream.expires_after(std::chrono::microseconds(options_.request_timeout));
    bhttp::async_write(connection.stream, connection.request,
                       [this, &connection](error_code ec, std::size_t) {
                         if (ec) return finish(connection, ec, "write");
                         read(connection);
                       });
  }

  void read(Connection& connection) {
    connection.parser.emplace();
    connection.parser->body_limit(kMaxResponseBytes);
    bhttp::async_read(connection.stream, connection.buffer, *connection.parser,
                      [this, &connection](error_code ec, std::size_t) {
                        if (ec) return finish(connection, ec, "read");
                        finish(connection, outcome_of(connection.parser->get()));
                      });
  }

  Outcome outcome_of(const bhttp::response<bhttp::string_body>& response) {
    if (response.result_int() != 200) {
      first_error_.remember(
          http_error_status(static_cast<int>(response.result_int()), response.body()).to_string());
      return {.verdict = Verdict::kError};
    }
    const nlohmann::json parsed = nlohmann::json::parse(response.body(), nullptr, false);
    StatusOr<service::Decision> decision = wire::decision_from_json(parsed);
    if (!decision.ok()) {
      first_error_.remember(decision.status().to_string());
      return {.verdict = Verdict::kError};
    }
    if (decision->lease) {
      // A concurrency limit: the lease would hold its place until it expires.
      first_error_.remember(
          "policy " + options_.policy +
          " has a concurrency limit, whose leases async callers do not give back; run it "
          "with --mode closed");
      return {.verdict = Verdict::kError};
    }
    return {.verdict = decision->verdict.allowed ? Verdict::kAllowed : Verdict::kDenied,
            .degraded = decision->degraded};
  }

  // A transport failure: the connection is closed and reopened by its next request.
  void finish(Connection& connection, const error_code& ec, std::string_view step) {
    first_error_.remember(std::string(step) + " " + host_header_ + ": " + ec.message());
    error_code ignored;
    connection.stream.socket().close(ignored);
    connection.buffer.clear();
    connection.connected = false;
    finish(connection, Outcome{.verdict = Verdict::kError});
  }

  // Frees the connection (or hands it to a waiting request), then answers the caller, who may
  // send its next request on it at once.
  void finish(Connection& connection, Outcome outcome) {
    OutcomeCallback done = std::move(connection.done);
    std::optional<Waiting> next;
    {
      MutexLock lock(mu_);
      if (waiting_.empty()) {
        idle_.push_back(&connection);
      } else {
        next.emplace(std::move(waiting_.front()));
        waiting_.pop_front();
      }
    }
    if (next) send(connection, std::move(next->body), std::move(next->done));
    done(outcome);
  }

  HttpTargetOptions options_;
  asio::io_context io_{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  tcp::resolver::results_type endpoints_;
  std::string host_header_;
  std::string body_prefix_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Connection>> all_ SLUICE_GUARDED_BY(mu_);
  std::vector<Connection*> idle_ SLUICE_GUARDED_BY(mu_);
  std::deque<Waiting> waiting_ SLUICE_GUARDED_BY(mu_);
  FirstError first_error_;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_async_http_target(const HttpTargetOptions& options,
                                                         const HttpUrl& url) {
  return std::unique_ptr<Target>(std::make_unique<AsyncHttpTarget>(options, url));
}

}  // namespace sluice::bench
