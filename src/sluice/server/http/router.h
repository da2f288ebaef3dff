// Routing requests to handlers by method and path pattern ("/v1/leases/{lease}/release"), and
// Exchange, the in-flight request a handler answers — now or later, from any thread. Handlers
// never see Beast or Asio: the server behind an Exchange provides timers and a pool for calls
// that block, so the decision API and the (later) admin API live in their own files.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/server/http/message.h"

namespace sluice::http {

// What the server does for an Exchange. Implementations are thread-safe.
class Transport {
 public:
  virtual ~Transport() = default;
  // Sends the response (once per exchange; later calls are ignored).
  virtual void respond(Response response) = 0;
  // Runs `fn` after `delay` on the connection's I/O thread, blocking no thread meanwhile.
  virtual void after(std::chrono::microseconds delay, std::function<void()> fn) = 0;
  // Runs `fn` where it may block (the store pool), or at once when the server has none.
  virtual void offload(std::function<void()> fn) = 0;
};

using PathParams = std::vector<std::pair<std::string, std::string>>;

// The bytes of request bodies the server holds in memory, across all connections, at most
// (HttpServerOptions::max_buffered_body_bytes; issue 32 M8). Thread-safe.
class BodyBudget {
 public:
  explicit BodyBudget(std::size_t limit) : limit_(limit) {}
  // Takes `bytes` when they fit under the limit; false, nothing taken (and counted), otherwise.
  bool try_take(std::size_t bytes);
  void give_back(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  std::size_t limit() const { return limit_; }
  std::uint64_t refusals() const { return refusals_.load(std::memory_order_relaxed); }

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> used_{0};
  std::atomic<std::uint64_t> refusals_{0};
};

// What one request body holds of a BodyBudget, given back when reset or destroyed (on any
// thread). Holds the budget alive, so it may outlive the server. Move-only.
class BodyCharge {
 public:
  BodyCharge() = default;
  explicit BodyCharge(std::shared_ptr<BodyBudget> budget) : budget_(std::move(budget)) {}
  BodyCharge(BodyCharge&& other) noexcept
      : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}
  BodyCharge& operator=(BodyCharge&& other) noexcept;
  ~BodyCharge() { reset(); }

  // Holds `bytes` in all (takes the difference when more); false when the budget cannot give it
  // (what is held stays held). Without a budget: always true.
  bool grow_to(std::size_t bytes);
  // Gives everything back.
  void reset();
  std::size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<BodyBudget> budget_;
  std::size_t bytes_ = 0;
};

class Exchange {
 public:
  Exchange(Request request, PathParams params, std::shared_ptr<Transport> transport,
           BodyCharge body_charge = {})
      : request_(std::move(request)),
        params_(std::move(params)),
        transport_(std::move(transport)),
        body_charge_(std::move(body_charge)) {}

  const Request& request() const { return request_; }
  // Frees the request's body and its share of the body budget, for a handler that has read it
  // and keeps the exchange a while (a decision waiting for its answer). Only on the thread that
  // called the handler, before it hands the exchange to another.
  void discard_body() {
    request_.body = std::string();
    body_charge_.reset();
  }
  // The decoded path parameter `name` ("" when the pattern has none).
  std::string_view param(std::string_view name) const;

  void respond(Response response) { transport_->respond(std::move(response)); }
  void after(std::chrono::microseconds delay, std::function<void()> fn) {
    transport_->after(delay, std::move(fn));
  }
  void offload(std::function<void()> fn) { transport_->offload(std::move(fn)); }

 private:
  Request request_;
  PathParams params_;
  std::shared_ptr<Transport> transport_;
  BodyCharge body_charge_;
};

// Must eventually call exchange->respond exactly once.
using Handler = std::function<void(std::shared_ptr<Exchange> exchange)>;

class Router {
 public:
  // `pattern`: literal segments and "{name}" segments matching one non-empty segment. Routes are
  // tried in the order added. Not thread-safe while adding; lookups are.
  void add(std::string_view method, std::string_view pattern, Handler handler);

  struct Match {
    const Handler* handler = nullptr;  // null: no route (see status)
    std::string_view route;            // the pattern, for metrics and logs
    PathParams params;
    int status = 200;   // 404 (no such path) or 405 (path exists, method does not)
    std::string allow;  // for 405: the methods the path has, "GET, POST"
  };
  Match match(std::string_view method, std::string_view path) const;

  // (method, pattern) of every route, in the order added: for documentation checks.
  std::vector<std::pair<std::string, std::string>> routes() const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace sluice::http
