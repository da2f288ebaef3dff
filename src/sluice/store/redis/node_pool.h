// sluice::redis::internal::NodePool: the connections to one Redis server (a standalone server or
// one master of a cluster), and how a formatted command picks one of them. Internal to the client.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/store/redis/connection.h"

namespace sluice::redis::internal {

class NodePool {
 public:
  // Starts `options.connections` connections to options.host:options.port, through TLS when
  // `tls` is not null.
  NodePool(asio::io_context& io, MultiplexerOptions options, Counters& counters,
           asio::ssl::context* tls = nullptr);

  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  // Queues the command on a ready connection (round robin), else on one still connecting. False
  // when none is usable (all are backing off after failures, or closed); `done` is then untouched.
  bool try_submit(std::string_view formatted, Completion& done, ErrorReplies errors,
                  bool asking = false);

  // Why the pool could not take a command: Unavailable naming the server and its last failure,
  // or the handshake's own code (a wrong password stays Unauthenticated while retries go on).
  Status unavailable_status() const;

  // Fails everything outstanding with Cancelled and stops reconnecting.
  void close();

  int ready_connections() const;
  // The engine script calls take on this node (script_engine.h): kScripts until a connection's
  // probe decides otherwise, and again after any reconnect's probe.
  ScriptEngine engine() const { return engine_.load(std::memory_order_relaxed); }
  const std::string& name() const { return name_; }  // "host:port"
  const MultiplexerOptions& options() const { return options_; }

 private:
  const MultiplexerOptions
      options_;  // the connections keep a reference: stable for the pool's life
  const std::string name_;
  std::atomic<ScriptEngine> engine_{ScriptEngine::kScripts};
  std::vector<std::shared_ptr<Connection>> connections_;
  std::atomic<std::size_t> next_{0};
};

}  // namespace sluice::redis::internal
