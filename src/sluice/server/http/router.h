// Routing requests to handlers by method and path pattern ("/v1/leases/{lease}/release"), and
// Exchange, the in-flight request a handler answers — now or later, from any thread. Handlers
// never see Beast or Asio: the server behind an Exchange provides timers and a pool for calls
// that block, so the decision API and the (later) admin API live in their own files.
#pragma once

#include <chrono>
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

class Exchange {
 public:
  Exchange(Request request, PathParams params, std::shared_ptr<Transport> transport)
      : request_(std::move(request)),
        params_(std::move(params)),
        transport_(std::move(transport)) {}

  const Request& request() const { return request_; }
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
