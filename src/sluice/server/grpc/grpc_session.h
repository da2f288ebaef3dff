// GrpcSession: one HTTP/2 connection's gRPC calls, on libnghttp2, with no socket and no clock of
// its own — the transport (grpc_server.cc) feeds it received bytes and the time, takes the bytes
// to send, and runs the closures it posts; the fuzz target drives it the same way. It holds the
// per-connection limits that live inside HTTP/2: header list size counted while a header block
// accumulates, streams at once, each stream's deadline for its request, message size, request
// bytes buffered per connection and across the server. Not thread-safe: one thread (the
// connection's) calls everything, save the replies handed to services, which post back.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/server/grpc/grpc_framing.h"
#include "sluice/status.h"
#include "sluice/time.h"

struct nghttp2_session;

namespace sluice::grpc_server {

// Request bytes buffered across every connection, against one bound. Thread-safe.
class BufferBudget {
 public:
  explicit BufferBudget(std::size_t max_bytes) : max_(max_bytes) {}
  // Takes `bytes` if they fit, else nothing.
  bool take(std::size_t bytes);
  void give(std::size_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> used_{0};
};

// What the server counts across sessions. Thread-safe.
struct SessionCounters {
  std::atomic<std::uint64_t> header_overflows{0};
  std::atomic<std::uint64_t> streams_reset{0};
};

// What a unary call knows of its caller besides the request message.
struct CallContext {
  std::optional<Micros> timeout;  // the caller's grpc-timeout
  std::string_view peer;          // the client's address, as the connection caps count it
};

// A method, found by its :path ("/package.Service/Method").
struct Method {
  // Unary: the request message in, exactly one reply out (OK: a response message), from any
  // thread. `context` lives until the method returns, not until the reply.
  using Unary = std::function<void(std::string_view request, const CallContext& context,
                                   std::function<void(StatusOr<std::string>)> reply)>;
  // Bidirectional streaming answered message by message on the session's thread (reflection).
  using EachMessage = std::function<StatusOr<std::string>(std::string_view request)>;
  // Server streaming whose messages follow a watched value (health Watch): the request in, the
  // watched key out (the session asks the current message for it at once and on each change).
  using Watch = std::function<StatusOr<std::string>(std::string_view request)>;

  Unary unary;
  EachMessage each_message;
  Watch watch;
};
using MethodTable = std::unordered_map<std::string, Method>;

struct SessionLimits {
  std::size_t max_concurrent_streams = 100;
  std::size_t max_header_list_bytes = std::size_t{16} * 1024;
  std::size_t max_message_bytes = std::size_t{4} * 1024 * 1024;
  std::size_t max_connection_buffer_bytes = std::size_t{4} * 1024 * 1024;
  Micros stream_timeout = 10 * kMicrosPerSecond;
  // Response bytes a stream may have waiting for the client's flow-control window beyond the
  // message being sent; a stream past it (a client that asks and does not read) is reset.
  std::size_t max_stream_outbound_bytes = std::size_t{64} * 1024;
};

class GrpcSession : public std::enable_shared_from_this<GrpcSession> {
 public:
  struct Hooks {
    // Runs `fn` later on the session's thread, then sends what is ready; thread-safe. May drop
    // `fn` when the connection is gone.
    std::function<void(std::function<void()>)> post;
    // The message a Watch stream on `key` sends now (called at its start and on notify).
    std::function<std::string(const std::string& key)> watch_message;
    // The client's address (CallContext::peer).
    std::string peer;
  };

  // `methods`, `budget` and `counters` must outlive the session. `now`: the steady time.
  static StatusOr<std::shared_ptr<GrpcSession>> create(const MethodTable& methods,
                                                       SessionLimits limits, BufferBudget& budget,
                                                       SessionCounters& counters, Hooks hooks,
                                                       Micros now);
  ~GrpcSession();
  GrpcSession(const GrpcSession&) = delete;
  GrpcSession& operator=(const GrpcSession&) = delete;

  // Feeds bytes read from the client at `now`. An error means the connection is over: send what
  // fill_output still gives (a GOAWAY), then close.
  Status receive(std::string_view bytes, Micros now);
  // Appends frames to send to `out` while it holds fewer than `max_bytes`.
  void fill_output(std::string& out, std::size_t max_bytes);
  // False once the connection has nothing more to do (GOAWAY exchanged and no stream open, or a
  // fatal error): close it when its output is written.
  bool alive() const;

  // The client preface and its SETTINGS have arrived.
  bool handshake_done() const { return handshake_done_; }
  std::size_t open_streams() const { return streams_.size(); }
  // Since when no stream has been open (meaningful when open_streams() == 0).
  Micros idle_since() const { return idle_since_; }
  std::uint64_t streams_started() const { return streams_started_; }
  // Response bytes queued in streams, not yet handed to nghttp2 (waiting for the client's
  // flow-control window): the transport stops reading above its bound.
  std::size_t queued_bytes() const { return queued_; }

  // Resets streams whose request is still incomplete past their deadline.
  void expire(Micros now);
  // GOAWAY: no new streams; the open ones finish. Idempotent.
  void go_away();
  // GOAWAY with `http2_error`, now; the connection closes once it is sent.
  void terminate(std::uint32_t http2_error);
  // Sends every Watch stream its key's message when it changed.
  void notify_watchers();
  // Ends every Watch stream with `status` (shutdown).
  void end_watches(const Status& status);

 private:
  struct Stream;
  GrpcSession(const MethodTable& methods, SessionLimits limits, BufferBudget& budget,
              SessionCounters& counters, Hooks hooks, Micros now);

  // nghttp2's callbacks (grpc_session.cc installs them), as members.
  int on_begin_frame(std::uint8_t type, std::size_t length);
  int on_begin_headers(std::int32_t stream_id);
  int on_header(std::int32_t stream_id, std::string_view name, std::string_view value);
  int on_headers_done(std::int32_t stream_id, bool end_stream);
  int on_data(std::int32_t stream_id, std::string_view data);
  int on_end_stream(std::int32_t stream_id);
  int on_stream_close(std::int32_t stream_id);
  int on_frame_sent(std::int32_t stream_id, bool end_stream);
  long read_data(Stream& stream, std::uint8_t* buffer, std::size_t length, std::uint32_t* flags);
  friend struct SessionCallbacks;

  Stream* find(std::int32_t stream_id);
  // The request is whole: runs the call (unary, watch) or ends it (bidi).
  void dispatch(Stream& stream);
  // Queues one response message on `stream` (HEADERS first when none went yet).
  void send_message(Stream& stream, std::string_view message);
  // Ends the call with `status`: trailers, or a trailers-only response when nothing was sent.
  void finish(Stream& stream, const Status& status);
  // The unary reply for `stream_id`, back on the session's thread.
  void reply(std::int32_t stream_id, StatusOr<std::string> answer);
  void reset(Stream& stream, std::uint32_t http2_error);
  // Accounts a change of `stream`'s held bytes; false when the bounds refuse it.
  bool hold(Stream& stream, std::size_t now_held);

  const MethodTable& methods_;
  const SessionLimits limits_;
  BufferBudget& budget_;
  SessionCounters& counters_;
  Hooks hooks_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, std::unique_ptr<Stream>> streams_;
  std::size_t held_ = 0;          // request bytes held by this connection's streams
  std::size_t queued_ = 0;        // response bytes in the streams' `out`
  std::size_t header_block_ = 0;  // encoded bytes of the header block being received
  bool header_overflow_ = false;
  bool handshake_done_ = false;
  bool fatal_ = false;
  Micros now_ = 0;
  Micros idle_since_ = 0;
  std::uint64_t streams_started_ = 0;
};

}  // namespace sluice::grpc_server
