// The gRPC transport: Boost.Asio sockets and timers around GrpcSession (nghttp2). It runs on the
// same I/O threads and accept loop as the HTTP server (server/net/io_workers.h): one io_context
// per I/O thread, connections handed out in turn, each connection then on one thread (no locks);
// deadlines checked by one sweep timer per thread; caps on connections in total and per client
// address, where a new connection replaces the one idle longest. The only file that includes the
// generated health messages.
#include "sluice/server/grpc/grpc_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)
#include <vector>

#include "grpc/health/v1/health.pb.h"
#include "sluice/core/connection_budget.h"
#include "sluice/core/mutex.h"
#include "sluice/server/grpc/grpc_session.h"
#include "sluice/server/grpc/reflection.h"
#include "sluice/server/grpc/rls_service.h"
#include "sluice/server/net/connection_count.h"
#include "sluice/server/net/io_workers.h"

namespace sluice::grpc_server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using health_v1 = grpc::health::v1::HealthCheckResponse;

constexpr char kRlsService[] = "envoy.service.ratelimit.v3.RateLimitService";
constexpr char kHealthService[] = "grpc.health.v1.Health";
constexpr char kReflectionService[] = "grpc.reflection.v1alpha.ServerReflection";
constexpr std::size_t kReadBytes = std::size_t{16} * 1024;

Micros steady_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Where closures from store and timer threads enter a connection's thread: closed at shutdown,
// before the io_contexts go, so a late decision has nowhere to land but the floor.
struct PostGate {
  Mutex mutex;
  bool open = true;
};

Status check_options(const GrpcServerOptions& o) {
  const auto positive = [](std::string_view name, Micros value) -> Status {
    if (value <= 0) return invalid_argument(std::string(name) + ": must be greater than 0");
    return Status();
  };
  if (o.io_threads < 1 || o.io_threads > 256) {
    return invalid_argument("io_threads: must be between 1 and 256");
  }
  if (o.max_message_bytes < 1 || o.max_message_bytes > 0xffffffffLL) {
    return invalid_argument("max_message_bytes: must be between 1 and 4294967295");
  }
  if (o.max_concurrent_streams < 1 || o.max_concurrent_streams > 0x7fffffffLL) {
    return invalid_argument("max_concurrent_streams: must be between 1 and 2147483647");
  }
  if (o.max_header_list_bytes < 64) {
    return invalid_argument("max_header_list_bytes: must be at least 64");
  }
  if (o.max_connection_buffer_bytes < 1) {
    return invalid_argument("max_connection_buffer_bytes: must be at least 1");
  }
  if (o.max_buffered_bytes < 1) return invalid_argument("max_buffered_bytes: must be at least 1");
  if (o.max_outbound_bytes < 1024) {
    return invalid_argument("max_outbound_bytes: must be at least 1024");
  }
  if (o.rls.max_descriptors < 1) return invalid_argument("max_descriptors: must be at least 1");
  for (const auto& [name, value] :
       {std::pair<std::string_view, Micros>{"handshake_timeout", o.handshake_timeout},
        {"idle_timeout", o.idle_timeout},
        {"stream_timeout", o.stream_timeout},
        {"shutdown_timeout", o.shutdown_timeout}}) {
    if (Status status = positive(name, value); !status.ok()) return status;
  }
  if (o.max_connection_age < 0) {
    return invalid_argument("max_connection_age: must not be negative");
  }
  return Status();
}

}  // namespace

struct GrpcServer::State {
  class Connection;

  // The I/O threads and the accept loop (io_workers.h).
  using Workers = server::IoWorkers<Connection>;
  using Worker = Workers::Worker;

  State(GrpcServerOptions options_in, service::Limiter& limiter)
      : options(std::move(options_in)),
        rls(limiter, options.rls),
        budget(options.max_buffered_bytes) {}

  Status start();
  // A new connection on its worker's thread: admitted under the caps, then started.
  void accepted(Worker& worker, tcp::socket socket);
  void stop(Micros grace);
  void build_methods();
  std::string health_message(const std::string& service) const;
  void opened(const std::string& peer) { caps.opened(peer); }
  void closed(const std::string& peer) { caps.closed(peer); }

  const GrpcServerOptions options;
  RlsService rls;
  BufferBudget budget;
  SessionCounters counters;
  MethodTable methods;
  std::vector<std::string> service_names;
  std::shared_ptr<PostGate> gate = std::make_shared<PostGate>();
  std::atomic<bool> serving{false};
  Workers workers;
  server::ConnectionCaps caps;
  std::atomic<std::uint64_t> timed_out{0};
  Mutex stop_mutex;
  bool stopped = false;
};

// One client connection; every member is touched only on its worker's thread.
class GrpcServer::State::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(State& server, Worker& worker, tcp::socket socket)
      : server_(server), worker_(worker), socket_(std::move(socket)) {
    error_code ec;
    const tcp::endpoint peer = socket_.remote_endpoint(ec);
    if (!ec) peer_ = peer.address().to_string();
    socket_.set_option(tcp::no_delay(true), ec);
    started_ = steady_now();
  }

  const std::string& peer() const { return peer_; }
  // No call open: closing it loses nothing.
  bool idle() const { return !closed_ && (!session_ || session_->open_streams() == 0); }
  Micros idle_since() const { return session_ ? session_->idle_since() : started_; }

  void start() {
    const GrpcServerOptions& o = server_.options;
    GrpcSession::Hooks hooks;
    hooks.post = [gate = server_.gate, io = &worker_.io,
                  weak = weak_from_this()](std::function<void()> fn) {
      MutexLock lock(gate->mutex);
      if (!gate->open) return;
      asio::post(*io, [weak, fn = std::move(fn)] {
        fn();
        if (auto self = weak.lock()) self->flush();
      });
    };
    hooks.watch_message = [&server = server_](const std::string& key) {
      return server.health_message(key);
    };
    hooks.peer = peer_;
    StatusOr<std::shared_ptr<GrpcSession>> session = GrpcSession::create(
        server_.methods,
        {.max_concurrent_streams = static_cast<std::size_t>(o.max_concurrent_streams),
         .max_header_list_bytes = o.max_header_list_bytes,
         .max_message_bytes = static_cast<std::size_t>(o.max_message_bytes),
         .max_connection_buffer_bytes = o.max_connection_buffer_bytes,
         .stream_timeout = o.stream_timeout,
         .max_stream_outbound_bytes = o.max_outbound_bytes},
        server_.budget, server_.counters, std::move(hooks), started_);
    // Without a session the connection is dropped: the socket closes with this object.
    if (session.ok()) serve(*std::move(session));
  }

  // Counts the connection open and starts the HTTP/2 exchange on `session`.
  void serve(std::shared_ptr<GrpcSession> session) {
    session_ = std::move(session);
    worker_.connections.insert(this);
    server_.opened(peer_);
    counted_ = true;
    flush();  // our SETTINGS
    read_more();
  }

  // Deadlines: the handshake, idleness, a stalled write, the connection's age, and the
  // streams' own (GrpcSession::expire).
  void tick(Micros now) {
    if (closed_) return;
    const GrpcServerOptions& o = server_.options;
    if (!session_->handshake_done() && now - started_ >= o.handshake_timeout) {
      server_.timed_out.fetch_add(1);
      return close();
    }
    // Answers that have not moved for idle_timeout: the client reads neither its socket nor
    // (HTTP/2 flow control) its streams.
    if (waiting_since_ && now - *waiting_since_ >= o.idle_timeout) {
      server_.timed_out.fetch_add(1);
      return close();
    }
    session_->expire(now);
    if (!going_away_ && session_->open_streams() == 0 &&
        now - session_->idle_since() >= o.idle_timeout) {
      server_.timed_out.fetch_add(1);
      going_away_ = true;
      session_->go_away();
    }
    if (!going_away_ && o.max_connection_age > 0 && now - started_ >= o.max_connection_age) {
      going_away_ = true;
      session_->go_away();
    }
    flush();
  }

  // Shutdown: Watch streams end, GOAWAY; calls in flight finish.
  void drain() {
    if (closed_) return;
    session_->notify_watchers();  // NOT_SERVING first
    session_->end_watches(unavailable("the server is shutting down"));
    going_away_ = true;
    session_->go_away();
    flush();
  }

  void notify_watchers() {
    if (closed_) return;
    session_->notify_watchers();
    flush();
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (counted_) {
      worker_.connections.erase(this);
      server_.closed(peer_);
    }
    error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  // Sends what the session has ready, within max_outbound_bytes; reads again once the queue is
  // below it; closes once the session is over and its last bytes are written.
  void flush() {
    if (closed_) return;
    const std::size_t bound = server_.options.max_outbound_bytes;
    if (pending_.size() < bound) session_->fill_output(pending_, bound);
    if (writing_.empty() && !pending_.empty()) {
      writing_.swap(pending_);
      asio::async_write(
          socket_, asio::buffer(writing_),
          [self = shared_from_this()](error_code ec, std::size_t) { self->on_written(ec); });
    }
    if (writing_.empty() && pending_.empty() && (failed_ || !session_->alive())) return close();
    if (writing_.empty() && session_->queued_bytes() == 0) {
      waiting_since_.reset();
    } else if (!waiting_since_) {
      waiting_since_ = steady_now();
    }
    if (paused_ && !failed_ && !over_bound()) {
      paused_ = false;
      read_more();
    }
  }

 private:
  void read_more() {
    if (closed_ || failed_ || reading_) return;
    if (over_bound()) {
      paused_ = true;  // a client that does not read gets no new calls answered
      return;
    }
    reading_ = true;
    socket_.async_read_some(asio::buffer(read_buffer_),
                            [self = shared_from_this()](error_code ec, std::size_t bytes) {
                              self->on_read(ec, bytes);
                            });
  }

  void on_read(error_code ec, std::size_t bytes) {
    reading_ = false;
    if (ec || closed_) return close();
    if (Status status = session_->receive({read_buffer_.data(), bytes}, steady_now());
        !status.ok()) {
      failed_ = true;  // send the GOAWAY the session queued, then close
    }
    flush();
    read_more();
  }

  // Output queued past max_outbound_bytes, in the socket's queue or the streams' (behind the
  // client's flow-control window).
  bool over_bound() const {
    const std::size_t bound = server_.options.max_outbound_bytes;
    return writing_.size() + pending_.size() >= bound || session_->queued_bytes() >= bound;
  }

  void on_written(error_code ec) {
    writing_.clear();
    if (ec) return close();
    waiting_since_ = steady_now();  // progress: the stall clock starts again
    flush();
  }

  State& server_;
  Worker& worker_;
  tcp::socket socket_;
  std::shared_ptr<GrpcSession> session_;
  std::array<char, kReadBytes> read_buffer_{};
  std::string pending_;  // frames not yet handed to the socket
  std::string writing_;  // frames being written
  std::string peer_ = "-";
  Micros started_ = 0;
  std::optional<Micros> waiting_since_;  // since when output has waited without progress
  bool counted_ = false;
  bool reading_ = false;
  bool paused_ = false;
  bool failed_ = false;
  bool going_away_ = false;
  bool closed_ = false;
};

std::string GrpcServer::State::health_message(const std::string& service) const {
  health_v1 response;
  if (service.empty() || service == kRlsService) {
    response.set_status(serving.load() ? health_v1::SERVING : health_v1::NOT_SERVING);
  } else {
    response.set_status(health_v1::SERVICE_UNKNOWN);
  }
  return response.SerializeAsString();
}

void GrpcServer::State::build_methods() {
  service_names = {kRlsService, kHealthService};
  if (options.reflection) service_names.push_back(kReflectionService);
  methods[std::string("/") + kRlsService + "/ShouldRateLimit"].unary =
      [this](std::string_view request, const CallContext& context,
             std::function<void(StatusOr<std::string>)> reply) {
        rls.should_rate_limit(request, context.timeout, context.peer, std::move(reply));
      };
  methods[std::string("/") + kHealthService + "/Check"].unary =
      [this](std::string_view request, const CallContext&,
             const std::function<void(StatusOr<std::string>)>& reply) {
        grpc::health::v1::HealthCheckRequest check;
        if (!check.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
          return reply(internal_error("HealthCheckRequest: the message does not parse"));
        }
        if (!check.service().empty() && check.service() != kRlsService) {
          return reply(not_found("unknown service " + check.service()));
        }
        reply(health_message(check.service()));
      };
  methods[std::string("/") + kHealthService + "/Watch"].watch =
      [](std::string_view request) -> StatusOr<std::string> {
    grpc::health::v1::HealthCheckRequest check;
    if (!check.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
      return internal_error("HealthCheckRequest: the message does not parse");
    }
    return check.service();
  };
  if (options.reflection) {
    methods[std::string("/") + kReflectionService + "/ServerReflectionInfo"].each_message =
        [this](std::string_view request) { return reflection_answer(request, service_names); };
  }
}

Status GrpcServer::State::start() {
  if (Status status = check_options(options); !status.ok()) return status;
  build_methods();
  // gRPC's share of the descriptors (connection_budget.h), so the gRPC port alone cannot starve
  // the HTTP port (or the store) of descriptors.
  caps.set(options.max_connections, options.max_connections_per_peer,
           connection_budget(descriptor_limit(), /*with_grpc=*/true).grpc);
  if (Status opened = workers.open(options.io_threads, options.host, options.port, "grpc-listen");
      !opened.ok()) {
    return opened;
  }
  serving.store(true);
  Micros shortest =
      std::min({options.handshake_timeout, options.idle_timeout, options.stream_timeout});
  if (options.max_connection_age > 0) shortest = std::min(shortest, options.max_connection_age);
  workers.start(
      server::sweep_interval(shortest),
      [this](Worker& worker, tcp::socket socket) { accepted(worker, std::move(socket)); },
      [](Connection& connection) { connection.tick(steady_now()); });
  return Status();
}

void GrpcServer::State::accepted(Worker& worker, tcp::socket socket) {
  auto connection = std::make_shared<Connection>(*this, worker, std::move(socket));
  if (!caps.admit(worker.connections, connection->peer())) return;  // closes going out of scope
  connection->start();
}

void GrpcServer::State::stop(Micros grace) {
  MutexLock lock(stop_mutex);
  if (stopped) return;
  stopped = true;
  serving.store(false);
  workers.drain(grace, [this] { return caps.open(); });
  {
    MutexLock gate_lock(gate->mutex);
    gate->open = false;
  }
  workers.join();
}

GrpcServer::GrpcServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

GrpcServer::~GrpcServer() { shutdown(0); }

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::start(GrpcServerOptions options,
                                                        service::Limiter& limiter) {
  auto state = std::make_unique<State>(std::move(options), limiter);
  if (Status status = state->start(); !status.ok()) {
    state->stop(0);
    return status;
  }
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(state)));
}

std::uint16_t GrpcServer::port() const { return state_->workers.port(); }

void GrpcServer::set_serving(bool serving) {
  MutexLock lock(state_->stop_mutex);  // the workers stay while it posts
  if (state_->stopped) return;
  if (state_->serving.exchange(serving) == serving) return;
  state_->workers.for_each_connection(
      [](State::Connection& connection) { connection.notify_watchers(); });
}

void GrpcServer::shutdown(Micros grace) { state_->stop(grace); }

GrpcServer::Stats GrpcServer::stats() const {
  return {.connections = state_->caps.open(),
          .refused = state_->caps.refused(),
          .evicted = state_->caps.evicted(),
          .accept_errors = state_->workers.accept_errors(),
          .timed_out = state_->timed_out.load(),
          .header_overflows = state_->counters.header_overflows.load(),
          .streams_reset = state_->counters.streams_reset.load()};
}

}  // namespace sluice::grpc_server
