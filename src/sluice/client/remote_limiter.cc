// The one translation unit of the client that includes Beast and Asio.
#include "sluice/client/remote_limiter.h"

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)

#include "sluice/core/http_status.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/wire/decision_json.h"

namespace sluice {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using nlohmann::json;

constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;

struct Connection {
  asio::io_context io{1};
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
};

// Runs one asynchronous operation on the connection's own io_context until it completes (or the
// stream's deadline closes it): blocking, with a timeout, on the caller's thread.
template <typename Start>
error_code run(Connection& connection, Micros timeout, Start start) {
  error_code result = asio::error::would_block;
  connection.stream.expires_after(std::chrono::microseconds(timeout));
  start([&result](error_code ec, auto&&...) { result = ec; });
  connection.io.restart();
  connection.io.run();
  return result;
}

Status transport_error(std::string_view step, const error_code& ec) {
  if (ec == beast::error::timeout) {
    return deadline_exceeded("sluice server: " + std::string(step) + " timed out");
  }
  return unavailable("sluice server: " + std::string(step) + ": " + ec.message());
}

Status error_from(const bhttp::response<bhttp::string_body>& response) {
  return http_error_status(static_cast<int>(response.result_int()), response.body());
}

Status problem_status(const json& problem) {
  const int status = problem.value("status", 500);
  std::string detail = problem.value("detail", "HTTP " + std::to_string(status));
  if (problem.contains("errors") && problem["errors"].is_array()) {
    for (const json& e : problem["errors"]) {
      if (e.is_object()) detail += "; " + e.value("field", "") + ": " + e.value("message", "");
    }
  }
  return {status_code_for_http(status), detail};
}

// Releases or renews `lease` through decide: whether it was live.
StatusOr<bool> lease_was_live(RemoteLimiter& limiter, service::Operation operation,
                              std::string_view policy, std::string_view app,
                              std::string_view subject, std::string_view lease) {
  SLUICE_ASSIGN_OR_RETURN(const service::Decision decision,
                          limiter.decide({.app = std::string(app),
                                          .policy = std::string(policy),
                                          .operation = operation,
                                          .subject = std::string(subject),
                                          .lease = std::string(lease)}));
  return decision.verdict.allowed;
}

std::string lease_target(std::string_view lease, std::string_view operation) {
  std::string target = "/v1/leases/";
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : lease) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.' || c == '~';
    if (plain) {
      target.push_back(static_cast<char>(c));
    } else {
      target.push_back('%');
      target.push_back(kHex[c >> 4]);
      target.push_back(kHex[c & 15]);
    }
  }
  return target + "/" + std::string(operation);
}

}  // namespace

Status http_error_status(int status, std::string_view body) {
  std::string detail = "HTTP " + std::to_string(status);
  const json problem = json::parse(body, nullptr, false);
  if (problem.is_object() && problem.contains("detail") && problem["detail"].is_string()) {
    detail = problem["detail"].get<std::string>();
    if (problem.contains("errors") && problem["errors"].is_array()) {
      for (const json& e : problem["errors"]) {
        if (e.is_object() && e.value("field", "") != "") {
          detail += "; " + e.value("field", "") + ": " + e.value("message", "");
        }
      }
    }
  }
  return {status_code_for_http(status), detail};
}

class RemoteLimiter::Impl {
 public:
  explicit Impl(RemoteLimiterOptions options) : options_(std::move(options)) {}

  Status resolve() {
    asio::io_context io;
    tcp::resolver resolver(io);
    error_code ec;
    endpoints_ = resolver.resolve(options_.host, std::to_string(options_.port), ec);
    if (ec || endpoints_.empty()) {
      return unavailable("sluice server: cannot resolve " + options_.host + ": " + ec.message());
    }
    host_header_ = options_.host + ":" + std::to_string(options_.port);
    return Status();
  }

  // One request/response, on an idle connection when there is one. A kept-alive connection the
  // server closed meanwhile fails before any answer byte: the request is re-sent once on a new
  // connection (the server never read it, so nothing was charged).
  StatusOr<bhttp::response<bhttp::string_body>> round_trip(bhttp::verb method,
                                                           const std::string& target,
                                                           std::string body, Micros extra_time) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    bhttp::request<bhttp::string_body> request{method, target, 11};
    request.set(bhttp::field::host, host_header_);
    request.set(bhttp::field::user_agent, "sluice-remote-limiter");
    if (!body.empty()) request.set(bhttp::field::content_type, "application/json");
    request.body() = std::move(body);
    request.keep_alive(true);
    request.prepare_payload();
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Connection> connection = take_idle();
      const bool reused = connection != nullptr;
      if (!connection) {
        connection = std::make_unique<Connection>();
        error_code ec = run(*connection, options_.connect_timeout, [&](auto handler) {
          connection->stream.async_connect(
              endpoints_, [handler](error_code e, const auto&) mutable { handler(e); });
        });
        if (ec) return transport_error("connect to " + host_header_, ec);
        connection->stream.socket().set_option(tcp::no_delay(true), ec);
        connects_.fetch_add(1, std::memory_order_relaxed);
      }
      const Micros timeout = options_.request_timeout + extra_time;
      error_code ec = run(*connection, timeout, [&](auto handler) {
        bhttp::async_write(connection->stream, request, handler);
      });
      bhttp::response_parser<bhttp::string_body> parser;
      parser.body_limit(kMaxResponseBytes);
      if (!ec) {
        ec = run(*connection, timeout, [&](auto handler) {
          bhttp::async_read(connection->stream, connection->buffer, parser, handler);
        });
      }
      if (ec) {
        const bool stale = ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                           ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
        if (reused && stale && attempt == 0) {
          retries_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        return transport_error("request " + target, ec);
      }
      bhttp::response<bhttp::string_body> response = parser.release();
      if (response.keep_alive()) give_back(std::move(connection));
      return response;
    }
  }

  StatusOr<json> call(bhttp::verb method, const std::string& target, const json& body,
                      Micros extra_time = 0) {
    SLUICE_ASSIGN_OR_RETURN(
        const bhttp::response<bhttp::string_body> response,
        round_trip(method, target,
                   body.is_null() ? std::string()
                                  : body.dump(-1, ' ', false, json::error_handler_t::replace),
                   extra_time));
    if (response.result_int() < 200 || response.result_int() >= 300) return error_from(response);
    json parsed = json::parse(response.body(), nullptr, false);
    if (parsed.is_discarded()) {
      return internal_error("sluice server: answer to " + target + " is not JSON");
    }
    return parsed;
  }

  RemoteLimiterStats stats() const {
    return {.requests = requests_.load(), .connects = connects_.load(), .retries = retries_.load()};
  }

 private:
  std::unique_ptr<Connection> take_idle() {
    MutexLock lock(mutex_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> connection = std::move(idle_.back());
    idle_.pop_back();
    return connection;
  }

  void give_back(std::unique_ptr<Connection> connection) {
    MutexLock lock(mutex_);
    if (idle_.size() < options_.max_idle_connections) idle_.push_back(std::move(connection));
  }

  RemoteLimiterOptions options_;
  tcp::resolver::results_type endpoints_;
  std::string host_header_;
  Mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_ SLUICE_GUARDED_BY(mutex_);
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> connects_{0};
  std::atomic<std::uint64_t> retries_{0};
};

RemoteLimiter::RemoteLimiter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteLimiter::~RemoteLimiter() = default;

StatusOr<std::unique_ptr<RemoteLimiter>> RemoteLimiter::create(RemoteLimiterOptions options) {
  if (options.host.empty()) return invalid_argument("host: must not be empty");
  if (options.port == 0) return invalid_argument("port: must not be 0");
  if (options.connect_timeout <= 0) return invalid_argument("connect_timeout: must be positive");
  if (options.request_timeout <= 0) return invalid_argument("request_timeout: must be positive");
  auto impl = std::make_unique<Impl>(std::move(options));
  SLUICE_RETURN_IF_ERROR(impl->resolve());
  return std::unique_ptr<RemoteLimiter>(new RemoteLimiter(std::move(impl)));
}

StatusOr<service::Decision> RemoteLimiter::decide(const service::DecisionRequest& request) {
  if (request.held || request.descriptor) {
    return invalid_argument("a remote server decides by policy name: it holds the policies");
  }
  json body = {{"app", request.app}, {"policy", request.policy}, {"key", request.subject}};
  std::string target = "/v1/" + std::string(service::operation_name(request.operation));
  Micros wait = 0;
  switch (request.operation) {
    case service::Operation::kAcquire:
    case service::Operation::kPeek:
      wait = request.wait;
      body["cost"] = request.operation == service::Operation::kPeek ? 0 : request.cost;
      // The API takes whole milliseconds; round down so the server never waits past `wait`.
      if (wait > 0) body["wait_ms"] = wait / kMicrosPerMilli;
      break;
    case service::Operation::kRelease:
    case service::Operation::kRenew: {
      const std::string_view field =
          request.operation == service::Operation::kRelease ? "released" : "renewed";
      SLUICE_ASSIGN_OR_RETURN(
          json answer,
          impl_->call(bhttp::verb::post,
                      lease_target(request.lease, service::operation_name(request.operation)),
                      body));
      if (!answer.contains(field) || !answer[field].is_boolean()) {
        return internal_error(
            "sluice server: " + std::string(service::operation_name(request.operation)) +
            " answer has no \"" + std::string(field) + "\"");
      }
      return service::Decision{.verdict = {.allowed = answer[field].get<bool>()}};
    }
    case service::Operation::kReserve:
      body["cost"] = request.cost;
      body["ttl_ms"] = (request.reservation_ttl + kMicrosPerMilli - 1) / kMicrosPerMilli;
      break;
    case service::Operation::kSettle:
      body["cost"] = request.cost;
      body["reservation"] = request.reservation;
      break;
    case service::Operation::kCharge:
    case service::Operation::kRefund:
      body["cost"] = request.cost;
      break;
  }
  SLUICE_ASSIGN_OR_RETURN(const json answer, impl_->call(bhttp::verb::post, target, body, wait));
  return wire::decision_from_json(answer);
}

StatusOr<service::Decision> RemoteLimiter::try_acquire(std::string_view policy,
                                                       std::string_view app,
                                                       std::string_view subject,
                                                       std::int64_t cost) {
  return acquire(policy, app, subject, cost, 0);
}

StatusOr<service::Decision> RemoteLimiter::acquire(std::string_view policy, std::string_view app,
                                                   std::string_view subject, std::int64_t cost,
                                                   Micros wait) {
  return decide({.app = std::string(app),
                 .policy = std::string(policy),
                 .subject = std::string(subject),
                 .cost = cost,
                 .wait = wait});
}

StatusOr<std::vector<StatusOr<service::Decision>>> RemoteLimiter::try_acquire_batch(
    const std::vector<RemoteAcquire>& requests) {
  json items = json::array();
  for (const RemoteAcquire& r : requests) {
    items.push_back({{"app", r.app}, {"policy", r.policy}, {"key", r.key}, {"cost", r.cost}});
  }
  SLUICE_ASSIGN_OR_RETURN(json answer, impl_->call(bhttp::verb::post, "/v1/acquire/batch",
                                                   {{"requests", std::move(items)}}));
  if (!answer.contains("decisions") || !answer["decisions"].is_array()) {
    return internal_error("sluice server: batch answer has no decisions list");
  }
  std::vector<StatusOr<service::Decision>> results;
  for (const json& item : answer["decisions"]) {
    if (item.is_object() && item.contains("allowed")) {
      results.push_back(wire::decision_from_json(item));
    } else if (item.is_object()) {
      results.push_back(problem_status(item));
    } else {
      results.push_back(internal_error("sluice server: batch item is not an object"));
    }
  }
  return results;
}

StatusOr<bool> RemoteLimiter::release(std::string_view policy, std::string_view app,
                                      std::string_view subject, std::string_view lease) {
  return lease_was_live(*this, service::Operation::kRelease, policy, app, subject, lease);
}

StatusOr<bool> RemoteLimiter::renew(std::string_view policy, std::string_view app,
                                    std::string_view subject, std::string_view lease) {
  return lease_was_live(*this, service::Operation::kRenew, policy, app, subject, lease);
}

Status RemoteLimiter::ready() {
  StatusOr<json> answer = impl_->call(bhttp::verb::get, "/readyz", nullptr);
  return answer.ok() ? Status() : answer.status();
}

RemoteLimiterStats RemoteLimiter::stats() const { return impl_->stats(); }

}  // namespace sluice
