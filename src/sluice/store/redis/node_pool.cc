#include "sluice/store/redis/node_pool.h"

#include <random>

namespace sluice::redis::internal {

NodePool::NodePool(asio::io_context& io, MultiplexerOptions options, Counters& counters,
                   asio::ssl::context* tls)
    : options_(std::move(options)), name_(options_.host + ":" + std::to_string(options_.port)) {
  std::random_device seeds;
  for (int i = 0; i < options_.connections; ++i) {
    connections_.push_back(
        std::make_shared<Connection>(io, options_, counters, seeds(), tls, &engine_));
  }
  for (const auto& connection : connections_) connection->start();
}

void NodePool::close() {
  for (const auto& connection : connections_) connection->close();
}

bool NodePool::try_submit(std::string_view formatted, Completion& done, ErrorReplies errors,
                          bool asking) {
  const std::size_t n = connections_.size();
  const std::size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
  for (const bool want_ready : {true, false}) {
    for (std::size_t i = 0; i < n; ++i) {
      Connection& connection = *connections_[(start + i) % n];
      const ConnState state = connection.state();
      const bool usable =
          want_ready ? state == ConnState::kReady
                     : (state == ConnState::kConnecting || state == ConnState::kHandshaking);
      if (usable && connection.try_submit(formatted, done, errors, asking)) return true;
    }
  }
  return false;
}

Status NodePool::unavailable_status() const {
  // The most telling failure: a refusal (a wrong password, a certificate that does not verify)
  // says more than "connection lost", whichever connection saw it.
  Status last;
  for (const auto& connection : connections_) {
    const Status error = connection->last_error();
    if (error.ok() || error.code() == StatusCode::kCancelled) continue;
    if (last.ok() ||
        (last.code() == StatusCode::kUnavailable && error.code() != StatusCode::kUnavailable)) {
      last = error;
    }
  }
  const StatusCode code = last.ok() ? StatusCode::kUnavailable : last.code();
  return Status(code,
                "redis " + name_ + " is unavailable" + (last.ok() ? "" : ": " + last.message()));
}

int NodePool::ready_connections() const {
  int ready = 0;
  for (const auto& connection : connections_) {
    if (connection->state() == ConnState::kReady) ++ready;
  }
  return ready;
}

}  // namespace sluice::redis::internal
