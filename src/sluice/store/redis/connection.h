// sluice::redis::internal::Connection: one TCP connection to one Redis server, its pipeline and
// its reconnect loop; and the vocabulary the client shares with it (completions, counters).
// Internal to the client: Asio appears here, so only the client's own sources include it.
//
// Threading: submitters (any thread) and the connection's strand share `mu_`-guarded state: the
// unsent bytes (`outbox_`), the FIFO of requests awaiting replies (`pending_`), `state_`,
// `write_in_flight_` and `gen_`. Everything else is touched only on the strand. `gen_` grows
// every time the socket is torn down or a new attempt starts; handlers carry the generation they
// were started in and ignore themselves when it is stale, so a late completion from an old socket
// never touches a new one. `state_` and `gen_` are written only on the strand (under `mu_`), so
// the strand may read them without the lock.
#pragma once

// Boost 1.74 + GCC 12: <utility> must precede the Asio headers.
#include <hiredis/hiredis.h>

#include <array>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/core/waiter.h"
#include "sluice/status.h"
#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/redis/resp.h"

namespace sluice::redis::internal {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

enum class ConnState : std::uint8_t { kConnecting, kHandshaking, kReady, kBackoff, kClosed };

// Whether a top-level error reply reaches the callback as a Reply (so the caller can inspect it,
// e.g. NOSCRIPT or MOVED) or converted to a Status.
enum class ErrorReplies : std::uint8_t { kAsStatus, kAsReply };

struct Counters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> writes{0};
  std::atomic<std::uint64_t> replies{0};
  std::atomic<std::uint64_t> rejected{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> connects{0};
  std::atomic<std::uint64_t> connect_failures{0};
  std::atomic<std::uint64_t> script_reloads{0};
  std::atomic<std::uint64_t> engine_fallbacks{0};  // module/function missing: sent as a script
  std::atomic<std::uint64_t> redirections{0};      // MOVED and ASK followed (Redis Cluster)
  std::atomic<std::uint64_t> retries{0};           // TRYAGAIN / CLUSTERDOWN waited out
  std::atomic<std::uint64_t> map_refreshes{0};     // topology reads (CLUSTER SHARDS / SLOTS)
};

// Asio's duration for a time in microseconds; a time as errors show it ("250ms", "1500us").
std::chrono::microseconds micros(Micros value);
std::string millis_text(Micros value);

inline void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
  counter.fetch_add(by, std::memory_order_relaxed);
}

// Runs `done` unless it is empty; an exception from it is swallowed (it must not take the
// connection or the I/O thread down with it).
void run_callback(Callback& done, StatusOr<Reply> result);

// The blocking calls' completion: the caller sleeps on a futex until the I/O thread stores the
// result.
using ReplyWaiter = Waiter<StatusOr<Reply>>;

// Where a request's outcome goes: a callback (async calls, run on an I/O thread) or a waiting
// caller (blocking calls: no callback object, no allocation).
struct Completion {
  Callback callback;
  ReplyWaiter* waiter = nullptr;
  // On an idle connection the submitting thread writes the command itself (always for a waiter).
  bool submitter_writes = false;
};

void complete(Completion& done, StatusOr<Reply> result);

struct Pending {
  Completion done;
  SteadyClock::time_point deadline;
  ErrorReplies errors;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `tls`: when not null, every connection attempt runs a TLS handshake (verifying the server's
  // certificate for options.tls.server_name, or the host) before AUTH/SELECT.
  // `engine`: where the handshake's probe (options.engine.probe) leaves the engine this node
  // runs (script_engine.h); shared by the node's connections. Null: no probe.
  Connection(asio::io_context& io, const MultiplexerOptions& options, Counters& counters,
             unsigned seed, asio::ssl::context* tls = nullptr,
             std::atomic<ScriptEngine>* engine = nullptr)
      : options_(options),
        engine_(engine),
        tls_context_(tls),
        counters_(counters),
        endpoint_name_(options.host + ":" + std::to_string(options.port)),
        strand_(asio::make_strand(io)),
        resolver_(strand_),
        socket_(strand_),
        connect_timer_(strand_),
        deadline_timer_(strand_),
        reader_(redisReaderCreate()),
        random_(seed) {}

  ~Connection();

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start();

  // Fails everything outstanding with Cancelled and stops reconnecting.
  void close();

  ConnState state() const { return visible_state_.load(std::memory_order_acquire); }

  Status last_error() const;

  // Queues one formatted command unless the connection is down (backoff or closed). `done` is
  // moved from only when the command was accepted. Any thread.
  //
  // When the connection is ready and idle (nothing written awaits a reply), a blocking caller (or
  // an async one with Dispatch::kImmediate) writes its bytes itself: a hand-off to the I/O thread
  // (post, wake-up, reactor re-arm) costs more CPU and latency than the send. Async submitters post
  // the write instead, so a burst of async calls from one thread still leaves in a few writes. When
  // replies are outstanding, the command waits in the outbox for the next reply to arrive: the I/O
  // thread flushes the outbox after delivering it. Many callers thus share one write per round trip
  // instead of writing one command each, which would cost Redis a read and a write per command.
  // Submitters arriving while a write is under way only append: the writer loops until the outbox
  // is empty.
  // `asking`: ASKING goes first, in the same write (a Redis Cluster ASK redirection).
  bool try_submit(std::string_view formatted, Completion& done, ErrorReplies errors,
                  bool asking = false);

 private:
  void set_state_locked(ConnState state);

  std::string& send_buffer();

  // Writes the outbox on the calling thread until it is empty (see try_submit). The caller owns
  // the write (write_in_flight_) on entry; if the socket's buffer fills up, the rest goes back to
  // the head of the outbox and the strand takes the write over.
  void write_from_caller(std::uint64_t gen);

  struct SendResult {
    std::size_t sent = 0;
    int error = 0;  // errno; 0 when all was sent, the socket would block, or it is gone
  };

  // Non-blocking send on the connection's socket, from any thread. `write_mu_` keeps the strand
  // from closing the descriptor (and the kernel from reusing its number) meanwhile.
  SendResult send_now(std::uint64_t gen, std::string_view data);

  // Aims the deadline timer at the oldest pending request. Strand only; `deadline_armed_` was
  // set by whoever asked for it.
  void arm_deadline_for_front();

  void connect();

  void on_connected();

  void become_ready();

  void do_write();

  void arm_deadline(SteadyClock::time_point when);

  // The oldest request is the one with the earliest deadline (all share one timeout and are
  // FIFO), so one timer aimed at the front covers them all.
  void on_deadline();

  void start_read();

  void on_read(std::size_t size);

  // Writes what try_submit left in the outbox while replies were outstanding. Strand only.
  void flush_deferred();

  // Hands replies to the oldest pending requests. False when the connection had to be failed.
  bool deliver();

  Status lost(const boost::system::error_code& ec) const;

  Status protocol_error() const;

  // Tears the socket down, fails every outstanding request with `why` and, unless closed,
  // schedules the next connection attempt. Strand only.
  void fail(const Status& why);

  void schedule_reconnect();

  // TLS: the handshake after TCP connect, then Redis's own handshake (AUTH/SELECT).
  void start_tls();
  void on_transport_ready();
  // Reads and writes through TLS when it is on. Strand only.
  using IoHandler = std::function<void(const boost::system::error_code&, std::size_t)>;
  void write_all(asio::const_buffer bytes, IoHandler handler);

  // The engine probe (connection_setup.cc): after AUTH/SELECT, the handshake asks the node for the
  // module's command, loads the function library and tries TIME in a script; the answers decide
  // the node's engine, or refuse the node (an explicit engine it lacks; no TIME on Redis's clock).
  void add_engine_probe();
  Status decide_engine();

  const MultiplexerOptions& options_;
  std::atomic<ScriptEngine>* const engine_;
  asio::ssl::context* const tls_context_;
  // A new stream per connection attempt (TLS state does not survive a reconnect); handlers keep
  // their own reference, so one torn down with operations pending stays alive until they end.
  using TlsStream = asio::ssl::stream<tcp::socket&>;
  std::shared_ptr<TlsStream> tls_;
  Counters& counters_;
  const std::string endpoint_name_;

  asio::strand<asio::io_context::executor_type> strand_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  asio::steady_timer connect_timer_;   // connect timeout, then backoff delay
  asio::steady_timer deadline_timer_;  // command timeouts

  // Strand only.
  redisReader* reader_;
  std::array<char, std::size_t{64} * 1024> read_buffer_;
  std::string writing_;    // bytes of the write in flight
  std::string handshake_;  // AUTH / SELECT, then the engine probe
  struct HandshakeStep {
    std::string name;  // for errors; never the password
    // A probe's reply, errors included; null: an error reply fails the connection.
    std::function<void(const Reply&)> probe;
  };
  std::vector<HandshakeStep> handshake_steps_;
  int handshake_remaining_ = 0;
  struct ProbeAnswers {
    bool module = false;
    bool functions = false;
    std::string functions_refusal;  // FUNCTION LOAD's error
    bool time = true;
    std::string time_refusal;  // the TIME probe's error
  };
  ProbeAnswers probe_;  // this handshake's
  int attempt_ = 0;     // consecutive failed attempts
  std::minstd_rand random_;
  std::vector<Reply> replies_;        // scratch for one read
  std::vector<Pending> completions_;  // scratch for one read

  mutable Mutex mu_;
  ConnState state_ = ConnState::kConnecting;             // written on the strand only
  std::uint64_t gen_ = 0;                                // written on the strand only
  std::string outbox_ SLUICE_GUARDED_BY(mu_);            // formatted commands not yet written
  std::size_t outbox_count_ SLUICE_GUARDED_BY(mu_) = 0;  // commands in outbox_
  std::size_t on_wire_ SLUICE_GUARDED_BY(mu_) =
      0;  // commands taken by a writer, not yet replied to
  std::deque<Pending> pending_ SLUICE_GUARDED_BY(mu_);  // awaiting replies, oldest first
  bool write_in_flight_ SLUICE_GUARDED_BY(mu_) =
      false;  // a caller or the strand is writing; it empties the outbox
  bool deadline_armed_ SLUICE_GUARDED_BY(mu_) =
      false;  // the deadline timer waits, or arm_deadline_for_front is posted
  Status last_error_ SLUICE_GUARDED_BY(mu_);

  // The descriptor callers write to directly, and the generation it belongs to (0: none).
  // Set on the strand when the connection becomes ready, cleared when the socket is closed.
  Mutex write_mu_;
  int socket_fd_ SLUICE_GUARDED_BY(write_mu_) = -1;
  std::uint64_t socket_gen_ SLUICE_GUARDED_BY(write_mu_) = 0;

  std::atomic<ConnState> visible_state_{ConnState::kConnecting};
};

}  // namespace sluice::redis::internal
