#include "sluice/store/redis/client.h"

// Boost 1.74 + GCC 12: <utility> must precede the Asio headers.
#include <hiredis/hiredis.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "sluice/store/redis/waiter.h"

namespace sluice::redis {

// ---------------------------------------------------------------------------------------------
// SHA-1, written from FIPS 180-4 §5.1.1 (padding), §6.1.2 (hash computation), §4.1.1 and §4.2.1
// (functions and constants).

namespace {

std::uint32_t rotl(std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void sha1_block(std::array<std::uint32_t, 5>& h, const unsigned char* block) {
  std::array<std::uint32_t, 80> w;
  for (std::size_t t = 0; t < 16; ++t) {
    w[t] = (std::uint32_t{block[4 * t]} << 24) | (std::uint32_t{block[4 * t + 1]} << 16) |
           (std::uint32_t{block[4 * t + 2]} << 8) | std::uint32_t{block[4 * t + 3]};
  }
  for (std::size_t t = 16; t < 80; ++t) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int t = 0; t < 80; ++t) {
    std::uint32_t f;
    std::uint32_t k;
    if (t < 20) {
      f = (b & c) ^ (~b & d);  // Ch
      k = 0x5a827999;
    } else if (t < 40) {
      f = b ^ c ^ d;  // Parity
      k = 0x6ed9eba1;
    } else if (t < 60) {
      f = (b & c) ^ (b & d) ^ (c & d);  // Maj
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;  // Parity
      k = 0xca62c1d6;
    }
    const std::uint32_t temp = rotl(a, 5) + f + e + k + w[t];
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = temp;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

}  // namespace

std::string sha1_hex(std::string_view data) {
  std::array<std::uint32_t, 5> h = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t full = data.size() / 64;
  for (std::size_t i = 0; i < full; ++i) sha1_block(h, bytes + 64 * i);

  // Padding: the tail, 0x80, zeros up to 56 mod 64, then the length in bits (64-bit big endian).
  std::array<unsigned char, 128> tail{};
  const std::size_t rest = data.size() - 64 * full;
  if (rest > 0) std::memcpy(tail.data(), bytes + 64 * full, rest);
  tail[rest] = 0x80;
  const std::size_t tail_size = rest < 56 ? 64 : 128;
  const std::uint64_t bit_length = static_cast<std::uint64_t>(data.size()) * 8;
  for (int i = 0; i < 8; ++i) {
    tail[tail_size - 1 - i] = static_cast<unsigned char>(bit_length >> (8 * i));
  }
  for (std::size_t offset = 0; offset < tail_size; offset += 64)
    sha1_block(h, tail.data() + offset);

  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(40);
  for (std::uint32_t word : h) {
    for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(word >> shift) & 0xf]);
  }
  return out;
}

Script::Script(std::string source) {
  std::string sha1 = sha1_hex(source);
  data_ = std::make_shared<const Data>(Data{std::move(source), std::move(sha1)});
}

ClientOptions client_options_from_url(const RedisUrl& url, ClientOptions base) {
  base.host = url.host;
  base.port = url.port;
  base.username = url.username;
  base.password = url.password;
  base.db = url.db;
  return base;
}

// ---------------------------------------------------------------------------------------------
// Connection: one TCP connection, its pipeline and its reconnect loop.
//
// Threading: submitters (any thread) and the connection's strand share `mu_`-guarded state: the
// unsent bytes (`outbox_`), the FIFO of requests awaiting replies (`pending_`), `state_`,
// `write_in_flight_` and `gen_`. Everything else is touched only on the strand. `gen_` grows
// every time the socket is torn down or a new attempt starts; handlers carry the generation they
// were started in and ignore themselves when it is stale, so a late completion from an old socket
// never touches a new one. `state_` and `gen_` are written only on the strand (under `mu_`), so
// the strand may read them without the lock.

namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

enum class ConnState : std::uint8_t { kConnecting, kHandshaking, kReady, kBackoff, kClosed };

// Whether a top-level error reply reaches the callback as a Reply (so the caller can inspect it,
// e.g. NOSCRIPT) or converted to a Status.
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
};

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) {
  counter.fetch_add(by, std::memory_order_relaxed);
}

void run_callback(Callback& done, StatusOr<Reply> result) {
  if (!done) return;
  try {
    done(std::move(result));
  } catch (...) {
    // A throwing callback must not take the connection (or the I/O thread) down with it.
  }
}

std::chrono::microseconds micros(Micros value) { return std::chrono::microseconds(value); }

std::string millis_text(Micros value) {
  if (value % kMicrosPerMilli == 0) return std::to_string(value / kMicrosPerMilli) + "ms";
  return std::to_string(value) + "us";
}

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

void complete(Completion& done, StatusOr<Reply> result) {
  if (done.waiter != nullptr) {
    done.waiter->set(std::move(result));
  } else {
    run_callback(done.callback, std::move(result));
  }
}

// RESP encoding, appended in place (a thread's scratch buffer is reused across calls, so
// formatting a command allocates nothing once warm): `*<n>\r\n`, then `$<len>\r\n<bytes>\r\n`
// per argument. Arguments are arbitrary bytes.
void append_decimal(std::string& out, std::size_t value) {
  char digits[24];
  const std::to_chars_result written = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, written.ptr);
}

void append_array_header(std::string& out, std::size_t count) {
  out.push_back('*');
  append_decimal(out, count);
  out.append("\r\n");
}

void append_bulk(std::string& out, std::string_view bytes) {
  out.push_back('$');
  append_decimal(out, bytes.size());
  out.append("\r\n");
  out.append(bytes);
  out.append("\r\n");
}

std::string& scratch_buffer() {
  thread_local std::string buffer;
  buffer.clear();
  return buffer;
}

struct Pending {
  Completion done;
  SteadyClock::time_point deadline;
  ErrorReplies errors;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(asio::io_context& io, const ClientOptions& options, Counters& counters, unsigned seed)
      : options_(options),
        counters_(counters),
        endpoint_name_(options.host + ":" + std::to_string(options.port)),
        strand_(asio::make_strand(io)),
        resolver_(strand_),
        socket_(strand_),
        connect_timer_(strand_),
        deadline_timer_(strand_),
        reader_(redisReaderCreate()),
        random_(seed) {}

  ~Connection() {
    if (reader_ != nullptr) redisReaderFree(reader_);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start() {
    asio::post(strand_, [self = shared_from_this()] { self->connect(); });
  }

  // Fails everything outstanding with Cancelled and stops reconnecting.
  void close() {
    asio::post(strand_, [self = shared_from_this()] {
      {
        std::lock_guard lock(self->mu_);
        self->set_state_locked(ConnState::kClosed);
      }
      self->fail(Status(StatusCode::kCancelled, "redis client is shutting down"));
    });
  }

  ConnState state() const { return visible_state_.load(std::memory_order_acquire); }

  Status last_error() const {
    std::lock_guard lock(mu_);
    return last_error_;
  }

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
  bool try_submit(std::string_view formatted, Completion& done, ErrorReplies errors) {
    const SteadyClock::time_point deadline = SteadyClock::now() + micros(options_.command_timeout);
    const bool writes_itself = done.waiter != nullptr || done.submitter_writes;
    bool write_here = false;
    bool post_write = false;
    bool arm = false;
    std::uint64_t gen = 0;
    {
      std::lock_guard lock(mu_);
      if (state_ == ConnState::kBackoff || state_ == ConnState::kClosed) return false;
      outbox_ += formatted;
      ++outbox_count_;
      pending_.push_back(Pending{std::move(done), deadline, errors});
      if (state_ == ConnState::kReady) {
        gen = gen_;
        if (!write_in_flight_ && on_wire_ == 0) {
          write_in_flight_ = true;
          (writes_itself ? write_here : post_write) = true;
        }
        if (!deadline_armed_) {
          deadline_armed_ = true;
          arm = true;
        }
      }
    }
    bump(counters_.requests);
    if (arm) {
      // The timer lives on the strand; once armed it re-arms itself while requests are pending,
      // so this post happens about once per command_timeout, not per request.
      asio::post(strand_, [self = shared_from_this(), gen] {
        if (gen == self->gen_) self->arm_deadline_for_front();
      });
    }
    if (post_write) {
      // Posting (rather than writing here) lets the strand pick up everything queued meanwhile.
      asio::post(strand_, [self = shared_from_this(), gen] {
        if (gen == self->gen_) self->do_write();
      });
    }
    if (write_here) write_from_caller(gen);
    return true;
  }

 private:
  void set_state_locked(ConnState state) {
    state_ = state;
    visible_state_.store(state, std::memory_order_release);
  }

  std::string& send_buffer() {
    thread_local std::string buffer;
    return buffer;
  }

  // Writes the outbox on the calling thread until it is empty (see try_submit). The caller owns
  // the write (write_in_flight_) on entry; if the socket's buffer fills up, the rest goes back to
  // the head of the outbox and the strand takes the write over.
  void write_from_caller(std::uint64_t gen) {
    std::string& sending = send_buffer();
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (gen != gen_) return;  // the connection failed meanwhile; fail() took the write back
        if (outbox_.empty()) {
          write_in_flight_ = false;
          return;
        }
        sending.swap(outbox_);
        outbox_.clear();
        on_wire_ += outbox_count_;
        outbox_count_ = 0;
      }
      bump(counters_.writes);
      const SendResult result = send_now(gen, sending);
      if (result.sent == sending.size()) continue;
      if (result.error == 0) {
        std::lock_guard lock(mu_);
        if (gen != gen_) return;
        outbox_.insert(0, sending, result.sent);
        asio::post(strand_, [self = shared_from_this(), gen] {
          if (gen == self->gen_) self->do_write();
        });
        return;
      }
      const boost::system::error_code ec(result.error, boost::system::system_category());
      asio::post(strand_, [self = shared_from_this(), gen, ec] {
        if (gen == self->gen_) self->fail(self->lost(ec));
      });
      return;
    }
  }

  struct SendResult {
    std::size_t sent = 0;
    int error = 0;  // errno; 0 when all was sent, the socket would block, or it is gone
  };

  // Non-blocking send on the connection's socket, from any thread. `write_mu_` keeps the strand
  // from closing the descriptor (and the kernel from reusing its number) meanwhile.
  SendResult send_now(std::uint64_t gen, std::string_view data) {
    std::lock_guard lock(write_mu_);
    if (socket_gen_ != gen) return {};
    std::size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n =
          ::send(socket_fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        return {.sent = sent, .error = n < 0 ? errno : EPIPE};
      }
    }
    return {.sent = sent, .error = 0};
  }

  // Aims the deadline timer at the oldest pending request. Strand only; `deadline_armed_` was
  // set by whoever asked for it.
  void arm_deadline_for_front() {
    SteadyClock::time_point when;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) {
        deadline_armed_ = false;
        return;
      }
      when = pending_.front().deadline;
    }
    arm_deadline(when);
  }

  void connect() {
    {
      std::lock_guard lock(mu_);
      if (state_ == ConnState::kClosed) return;
      set_state_locked(ConnState::kConnecting);
      ++gen_;
    }
    const std::uint64_t gen = gen_;
    auto self = shared_from_this();
    connect_timer_.expires_after(micros(options_.connect_timeout));
    connect_timer_.async_wait([self, gen](const boost::system::error_code& ec) {
      if (ec || gen != self->gen_ || self->state_ == ConnState::kReady) return;
      self->fail(unavailable("connecting to redis " + self->endpoint_name_ + " timed out after " +
                             millis_text(self->options_.connect_timeout)));
    });
    resolver_.async_resolve(
        options_.host, std::to_string(options_.port), tcp::resolver::numeric_service,
        [self, gen](const boost::system::error_code& ec,
                    const tcp::resolver::results_type& results) {
          if (gen != self->gen_) return;
          if (ec) {
            self->fail(unavailable("resolving redis host \"" + self->options_.host +
                                   "\": " + ec.message()));
            return;
          }
          asio::async_connect(
              self->socket_, results,
              [self, gen](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
                if (gen != self->gen_) return;
                if (connect_ec) {
                  self->fail(unavailable("connecting to redis " + self->endpoint_name_ + ": " +
                                         connect_ec.message()));
                  return;
                }
                self->on_connected();
              });
        });
  }

  void on_connected() {
    boost::system::error_code ignored;
    socket_.set_option(tcp::no_delay(true), ignored);
    // Lets the kernel notice a peer that vanished while the connection sits idle.
    socket_.set_option(asio::socket_base::keep_alive(true), ignored);
    start_read();

    handshake_.clear();
    handshake_steps_.clear();
    handshake_remaining_ = 0;
    // `step` names the command in errors; it never includes the password.
    const auto add = [&](std::vector<std::string> args, std::string step) {
      StatusOr<std::string> formatted = format_command(args);
      if (formatted.ok()) {
        handshake_ += *formatted;
        handshake_steps_.push_back(std::move(step));
        ++handshake_remaining_;
      }
    };
    if (!options_.password.empty()) {
      if (options_.username.empty()) {
        add({"AUTH", options_.password}, "AUTH");
      } else {
        add({"AUTH", options_.username, options_.password}, "AUTH " + options_.username);
      }
    }
    if (options_.db != 0) {
      const std::string db = std::to_string(options_.db);
      add({"SELECT", db}, "SELECT " + db);
    }
    if (handshake_remaining_ == 0) {
      become_ready();
      return;
    }
    {
      std::lock_guard lock(mu_);
      set_state_locked(ConnState::kHandshaking);
    }
    const std::uint64_t gen = gen_;
    asio::async_write(
        socket_, asio::buffer(handshake_),
        [self = shared_from_this(), gen](const boost::system::error_code& ec, std::size_t) {
          if (gen != self->gen_ || !ec) return;
          self->fail(self->lost(ec));
        });
  }

  void become_ready() {
    connect_timer_.cancel();
    bump(counters_.connects);
    {
      std::lock_guard lock(write_mu_);
      socket_fd_ = socket_.native_handle();
      socket_gen_ = gen_;
    }
    bool start_write = false;
    {
      std::lock_guard lock(mu_);
      set_state_locked(ConnState::kReady);
      last_error_ = Status();
      // Requests queued while connecting start their command timeout now.
      const SteadyClock::time_point deadline =
          SteadyClock::now() + micros(options_.command_timeout);
      for (Pending& pending : pending_) pending.deadline = deadline;
      if (!outbox_.empty() && !write_in_flight_) {
        write_in_flight_ = true;
        start_write = true;
      }
    }
    if (start_write) do_write();
  }

  void do_write() {
    bool arm = false;
    SteadyClock::time_point arm_at;
    {
      std::lock_guard lock(mu_);
      if (state_ != ConnState::kReady || outbox_.empty()) {
        write_in_flight_ = false;
        return;
      }
      writing_.swap(outbox_);
      outbox_.clear();
      on_wire_ += outbox_count_;
      outbox_count_ = 0;
      if (!deadline_armed_ && !pending_.empty()) {
        deadline_armed_ = true;
        arm = true;
        arm_at = pending_.front().deadline;
      }
    }
    bump(counters_.writes);
    if (arm) arm_deadline(arm_at);
    const std::uint64_t gen = gen_;
    asio::async_write(
        socket_, asio::buffer(writing_),
        [self = shared_from_this(), gen](const boost::system::error_code& ec, std::size_t) {
          if (gen != self->gen_) return;
          if (ec) {
            self->fail(self->lost(ec));
            return;
          }
          self->do_write();
        });
  }

  void arm_deadline(SteadyClock::time_point when) {
    deadline_timer_.expires_at(when);
    const std::uint64_t gen = gen_;
    deadline_timer_.async_wait(
        [self = shared_from_this(), gen](const boost::system::error_code& ec) {
          if (gen != self->gen_ || ec == asio::error::operation_aborted) return;
          self->on_deadline();
        });
  }

  // The oldest request is the one with the earliest deadline (all share one timeout and are
  // FIFO), so one timer aimed at the front covers them all.
  void on_deadline() {
    const SteadyClock::time_point now = SteadyClock::now();
    Completion expired;
    std::optional<SteadyClock::time_point> next;
    {
      std::lock_guard lock(mu_);
      if (pending_.empty()) {
        deadline_armed_ = false;
        return;
      }
      if (pending_.front().deadline > now) {
        next = pending_.front().deadline;
      } else {
        expired = std::move(pending_.front().done);
        pending_.pop_front();
      }
    }
    if (next) {
      arm_deadline(*next);
      return;
    }
    bump(counters_.timeouts);
    // Later replies would be matched to the wrong requests: this connection is done.
    fail(unavailable("connection to redis " + endpoint_name_ +
                     " was reset because an earlier command on it timed out"));
    complete(expired, deadline_exceeded("redis " + endpoint_name_ + " sent no reply within " +
                                        millis_text(options_.command_timeout)));
  }

  void start_read() {
    socket_.async_read_some(asio::buffer(read_buffer_),
                            [self = shared_from_this(), gen = gen_](
                                const boost::system::error_code& ec, std::size_t size) {
                              if (gen != self->gen_) return;
                              if (ec) {
                                self->fail(self->lost(ec));
                                return;
                              }
                              self->on_read(size);
                            });
  }

  void on_read(std::size_t size) {
    if (redisReaderFeed(reader_, read_buffer_.data(), size) != REDIS_OK) {
      fail(protocol_error());
      return;
    }
    replies_.clear();
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
        fail(protocol_error());
        return;
      }
      if (raw == nullptr) break;
      Reply reply = reply_from_hiredis(*static_cast<const redisReply*>(raw));
      freeReplyObject(raw);
      if (handshake_remaining_ > 0) {
        if (reply.is_error()) {
          const std::size_t step = handshake_steps_.size() - handshake_remaining_;
          const Status status = error_reply_status(reply.as_string());
          fail(Status(status.code(), "handshake with redis " + endpoint_name_ + " failed at " +
                                         handshake_steps_[step] + ": " + status.message()));
          return;
        }
        if (--handshake_remaining_ == 0) become_ready();
        continue;
      }
      replies_.push_back(std::move(reply));
    }
    // Writing first gets Redis the next batch before the wake-ups below, each of which may hand
    // this thread's core to the woken caller. What callers submit while being woken goes out when
    // this write completes (do_write takes the outbox again) or with the next reply.
    flush_deferred();
    if (!replies_.empty() && !deliver()) return;
    start_read();
  }

  // Writes what try_submit left in the outbox while replies were outstanding. Strand only.
  void flush_deferred() {
    {
      std::lock_guard lock(mu_);
      if (state_ != ConnState::kReady || write_in_flight_ || outbox_.empty()) return;
      write_in_flight_ = true;
    }
    do_write();
  }

  // Hands replies to the oldest pending requests. False when the connection had to be failed.
  bool deliver() {
    completions_.clear();
    bool unexpected = false;
    bool write_left_behind = false;
    {
      std::lock_guard lock(mu_);
      if (pending_.size() < replies_.size()) {
        unexpected = true;
      } else {
        for (std::size_t i = 0; i < replies_.size(); ++i) {
          completions_.push_back(std::move(pending_.front()));
          pending_.pop_front();
        }
        on_wire_ -= std::min(on_wire_, replies_.size());
        // A submitter that came after flush_deferred() but before this saw replies outstanding
        // and left its command in the outbox for the next reply, which will not come now: the
        // outbox goes out here, or it would wait for another submission (or its timeout).
        if (on_wire_ == 0 && !write_in_flight_ && !outbox_.empty()) {
          write_in_flight_ = true;
          write_left_behind = true;
        }
      }
    }
    if (write_left_behind) do_write();
    if (unexpected) {
      // A reply nobody asked for: e.g. "-ERR max number of clients reached" before a close.
      fail(unavailable("unexpected reply from redis " + endpoint_name_ + ": " +
                       replies_.back().debug_string()));
      return false;
    }
    // Replies prove the connection healthy: the next failure reconnects without delay.
    attempt_ = 0;
    bump(counters_.replies, replies_.size());
    for (std::size_t i = 0; i < replies_.size(); ++i) {
      Pending& pending = completions_[i];
      Reply& reply = replies_[i];
      if (reply.is_error() && pending.errors == ErrorReplies::kAsStatus) {
        complete(pending.done, error_reply_status(reply.as_string()));
      } else {
        complete(pending.done, std::move(reply));
      }
    }
    completions_.clear();
    return true;
  }

  Status lost(const boost::system::error_code& ec) const {
    if (ec == asio::error::eof) {
      return unavailable("connection to redis " + endpoint_name_ + " closed by the server");
    }
    return unavailable("connection to redis " + endpoint_name_ + " lost: " + ec.message());
  }

  Status protocol_error() const {
    return unavailable("protocol error from redis " + endpoint_name_ + ": " +
                       std::string(reader_->errstr));
  }

  // Tears the socket down, fails every outstanding request with `why` and, unless closed,
  // schedules the next connection attempt. Strand only.
  void fail(const Status& why) {
    std::deque<Pending> failed;
    bool closed = false;
    {
      std::lock_guard lock(mu_);
      ++gen_;
      failed.swap(pending_);
      outbox_.clear();
      outbox_count_ = 0;
      on_wire_ = 0;
      write_in_flight_ = false;
      deadline_armed_ = false;
      last_error_ = why;
      closed = state_ == ConnState::kClosed;
      if (!closed) set_state_locked(ConnState::kBackoff);
    }
    {
      std::lock_guard lock(write_mu_);
      boost::system::error_code ignored;
      socket_.close(ignored);
      socket_gen_ = 0;
    }
    resolver_.cancel();
    connect_timer_.cancel();
    deadline_timer_.cancel();
    handshake_remaining_ = 0;
    redisReaderFree(reader_);
    reader_ = redisReaderCreate();
    if (!closed) bump(counters_.connect_failures);

    for (Pending& pending : failed) complete(pending.done, why);
    if (!closed) schedule_reconnect();
  }

  void schedule_reconnect() {
    Micros delay = 0;
    if (attempt_ > 0) {
      delay = options_.reconnect_backoff_min;
      for (int i = 1; i < attempt_ && delay < options_.reconnect_backoff_max; ++i) delay *= 2;
      delay = std::min(delay, options_.reconnect_backoff_max);
      // Jitter keeps many clients from reconnecting in lockstep after a restart.
      std::uniform_int_distribution<Micros> jitter(delay / 2, delay);
      delay = jitter(random_);
    }
    if (attempt_ < 64) ++attempt_;
    const std::uint64_t gen = gen_;
    auto self = shared_from_this();
    if (delay == 0) {
      asio::post(strand_, [self, gen] {
        if (gen == self->gen_) self->connect();
      });
      return;
    }
    connect_timer_.expires_after(micros(delay));
    connect_timer_.async_wait([self, gen](const boost::system::error_code& ec) {
      if (ec || gen != self->gen_) return;
      self->connect();
    });
  }

  const ClientOptions& options_;
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
  std::string handshake_;  // AUTH / SELECT
  std::vector<std::string> handshake_steps_;
  int handshake_remaining_ = 0;
  int attempt_ = 0;  // consecutive failed attempts
  std::minstd_rand random_;
  std::vector<Reply> replies_;        // scratch for one read
  std::vector<Pending> completions_;  // scratch for one read

  mutable std::mutex mu_;
  ConnState state_ = ConnState::kConnecting;  // written on the strand only
  std::uint64_t gen_ = 0;                     // written on the strand only
  std::string outbox_;                        // formatted commands not yet written
  std::size_t outbox_count_ = 0;              // commands in outbox_
  std::size_t on_wire_ = 0;                   // commands taken by a writer, not yet replied to
  std::deque<Pending> pending_;               // awaiting replies, oldest first
  bool write_in_flight_ = false;  // a caller or the strand is writing; it empties the outbox
  bool deadline_armed_ = false;   // the deadline timer waits, or arm_deadline_for_front is posted
  Status last_error_;

  // The descriptor callers write to directly, and the generation it belongs to (0: none).
  // Set on the strand when the connection becomes ready, cleared when the socket is closed.
  std::mutex write_mu_;
  int socket_fd_ = -1;
  std::uint64_t socket_gen_ = 0;

  std::atomic<ConnState> visible_state_{ConnState::kConnecting};
};

bool is_noscript(const Reply& reply) {
  return reply.is_error() && reply.as_string().rfind("NOSCRIPT", 0) == 0;
}

bool breaks_pairing(std::string_view name) {
  static constexpr std::array<std::string_view, 4> kRefused = {"SUBSCRIBE", "PSUBSCRIBE",
                                                               "SSUBSCRIBE", "MONITOR"};
  for (std::string_view refused : kRefused) {
    if (name.size() != refused.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      char c = name[i];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      same = c == refused[i];
    }
    if (same) return true;
  }
  return false;
}

Status validate(const ClientOptions& options) {
  const auto error = [](const std::string& text) {
    return invalid_argument("redis options: " + text);
  };
  if (options.host.empty()) return error("host must not be empty");
  if (options.port == 0) return error("port must be 1-65535");
  if (options.db < 0) return error("db must be >= 0");
  if (options.connections < 1 || options.connections > 1024) {
    return error("connections must be 1-1024");
  }
  if (options.io_threads < 1 || options.io_threads > 256) return error("io_threads must be 1-256");
  if (options.connect_timeout <= 0) return error("connect_timeout must be > 0");
  if (options.command_timeout <= 0) return error("command_timeout must be > 0");
  if (options.reconnect_backoff_min <= 0) return error("reconnect_backoff_min must be > 0");
  if (options.reconnect_backoff_max < options.reconnect_backoff_min) {
    return error("reconnect_backoff_max must be >= reconnect_backoff_min");
  }
  if (!options.username.empty() && options.password.empty()) {
    return error("username needs a password");
  }
  return Status();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

class Client::Impl {
 public:
  explicit Impl(ClientOptions options)
      : options_(std::move(options)), io_(options_.io_threads), work_(asio::make_work_guard(io_)) {
    std::random_device seeds;
    for (int i = 0; i < options_.connections; ++i) {
      connections_.push_back(std::make_shared<Connection>(io_, options_, counters_, seeds()));
    }
    for (const auto& connection : connections_) connection->start();
    try {
      for (int i = 0; i < options_.io_threads; ++i) {
        threads_.emplace_back([this] {
          for (;;) {
            try {
              io_.run();
              return;
            } catch (...) {
              // Handlers don't throw by design; if one does, keep the loop alive.
            }
          }
        });
      }
    } catch (...) {
      shutdown();  // joins the threads that did start, so their destructors don't terminate
      throw;
    }
  }

  ~Impl() { shutdown(); }

  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Fails outstanding requests with Cancelled (their callbacks run), then lets the loop drain.
  void shutdown() {
    for (const auto& connection : connections_) connection->close();
    work_.reset();
    for (std::thread& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  bool on_io_thread() { return io_.get_executor().running_in_this_thread(); }

  // Fails a request that never reached a connection: a waiting caller at once, a callback on an
  // I/O thread (callbacks never run inside the call that submits them).
  void fail_later(Completion done, Status status) {
    if (done.waiter != nullptr) {
      done.waiter->set(std::move(status));
      return;
    }
    asio::post(io_, [done = std::move(done.callback), status = std::move(status)]() mutable {
      run_callback(done, std::move(status));
    });
  }

  void submit(std::span<const std::string> args, std::optional<std::size_t> key_index,
              ErrorReplies errors, Completion done) {
    if (args.empty()) {
      fail_later(std::move(done), invalid_argument("redis: empty command"));
      return;
    }
    if (breaks_pairing(args[0])) {
      fail_later(std::move(done),
                 invalid_argument("redis: " + args[0] +
                                  " is not supported: its replies don't pair with requests"));
      return;
    }
    std::string& formatted = scratch_buffer();
    append_array_header(formatted, args.size());
    for (const std::string& arg : args) append_bulk(formatted, arg);
    route(formatted, key_index, errors, std::move(done));
  }

  // Sends one formatted command and blocks the calling thread until its outcome.
  StatusOr<Reply> submit_and_wait(std::string_view formatted, std::optional<std::size_t> key_index,
                                  ErrorReplies errors) {
    ReplyWaiter waiter;
    route(formatted, key_index, errors, Completion{.callback = nullptr, .waiter = &waiter});
    return waiter.wait();
  }

  StatusOr<Reply> execute_and_wait(std::span<const std::string> args,
                                   std::optional<std::size_t> key_index) {
    ReplyWaiter waiter;
    submit(args, key_index, ErrorReplies::kAsStatus,
           Completion{.callback = nullptr, .waiter = &waiter});
    return waiter.wait();
  }

  // The blocking script call: formats straight from the caller's strings into the thread's
  // scratch buffer (no argument vector, no callback, no shared state), and on NOSCRIPT re-sends
  // as EVAL from the calling thread.
  StatusOr<Reply> eval_and_wait(const Script& script, std::span<const std::string> keys,
                                std::span<const std::string> args) {
    const std::optional<std::size_t> key_index =
        keys.empty() ? std::nullopt : std::optional<std::size_t>(3);
    const auto format = [&](std::string_view command, std::string_view body) -> std::string& {
      std::string& out = scratch_buffer();
      append_array_header(out, 3 + keys.size() + args.size());
      append_bulk(out, command);
      append_bulk(out, body);
      char digits[24];
      const std::to_chars_result written =
          std::to_chars(std::begin(digits), std::end(digits), keys.size());
      append_bulk(out, std::string_view(digits, static_cast<std::size_t>(written.ptr - digits)));
      for (const std::string& key : keys) append_bulk(out, key);
      for (const std::string& arg : args) append_bulk(out, arg);
      return out;
    };
    StatusOr<Reply> result =
        submit_and_wait(format("EVALSHA", script.sha1()), key_index, ErrorReplies::kAsReply);
    if (result.ok() && is_noscript(*result)) {
      // The server lost its script cache: EVAL runs the script and caches it again.
      bump(counters_.script_reloads);
      return submit_and_wait(format("EVAL", script.source()), key_index, ErrorReplies::kAsStatus);
    }
    if (result.ok() && result->is_error()) return error_reply_status(result->as_string());
    return result;
  }

  // Picks the connection for a command. Single node: round robin over ready connections, then
  // over connections still connecting; none usable -> fail fast. This is the seam for Redis
  // Cluster: a router would map hash_slot(args[key_index]) to the owning node's connections.
  void route(std::string_view formatted, std::optional<std::size_t> /*key_index*/,
             ErrorReplies errors, Completion done) {
    const std::size_t n = connections_.size();
    const std::size_t start = next_.fetch_add(1, std::memory_order_relaxed) % n;
    for (const bool want_ready : {true, false}) {
      for (std::size_t i = 0; i < n; ++i) {
        Connection& connection = *connections_[(start + i) % n];
        const ConnState state = connection.state();
        const bool usable =
            want_ready ? state == ConnState::kReady
                       : (state == ConnState::kConnecting || state == ConnState::kHandshaking);
        if (usable && connection.try_submit(formatted, done, errors)) return;
      }
    }
    bump(counters_.rejected);
    // Keep the code of the last failure when it says more than "unavailable": a wrong password
    // stays Unauthenticated while the client keeps retrying.
    const Status last = connections_[start]->last_error();
    const StatusCode code =
        last.ok() || last.code() == StatusCode::kCancelled ? StatusCode::kUnavailable : last.code();
    fail_later(std::move(done),
               Status(code, "redis " + options_.host + ":" + std::to_string(options_.port) +
                                " is unavailable" + (last.ok() ? "" : ": " + last.message())));
  }

  ClientStats stats() const {
    ClientStats out;
    out.requests = counters_.requests.load(std::memory_order_relaxed);
    out.writes = counters_.writes.load(std::memory_order_relaxed);
    out.replies = counters_.replies.load(std::memory_order_relaxed);
    out.rejected = counters_.rejected.load(std::memory_order_relaxed);
    out.timeouts = counters_.timeouts.load(std::memory_order_relaxed);
    out.connects = counters_.connects.load(std::memory_order_relaxed);
    out.connect_failures = counters_.connect_failures.load(std::memory_order_relaxed);
    out.script_reloads = counters_.script_reloads.load(std::memory_order_relaxed);
    for (const auto& connection : connections_) {
      if (connection->state() == ConnState::kReady) ++out.ready_connections;
    }
    return out;
  }

  const ClientOptions options_;
  Counters counters_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::vector<std::shared_ptr<Connection>> connections_;
  std::vector<std::thread> threads_;
  std::atomic<std::size_t> next_{0};
};

// ---------------------------------------------------------------------------------------------

StatusOr<std::unique_ptr<Client>> Client::create(ClientOptions options) {
  if (Status status = validate(options); !status.ok()) return status;
  try {
    return std::unique_ptr<Client>(new Client(std::make_unique<Impl>(std::move(options))));
  } catch (const std::exception& e) {
    // Thread creation or the entropy source failed: report, don't throw across the module.
    return internal_error(std::string("redis client could not start: ") + e.what());
  }
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options_; }

ClientStats Client::stats() const { return impl_->stats(); }

void Client::async_execute(Request request, Callback done) {
  impl_->submit(request.args, request.key_index, ErrorReplies::kAsStatus,
                Completion{.callback = std::move(done)});
}

void Client::async_command(std::vector<std::string> args, Callback done) {
  impl_->submit(args, std::nullopt, ErrorReplies::kAsStatus,
                Completion{.callback = std::move(done)});
}

namespace {

struct EvalCall {
  Script script;
  std::vector<std::string> args;  // EVALSHA sha numkeys keys… args…
  std::optional<std::size_t> key_index;
  Callback done;
};

}  // namespace

void Client::async_eval_script(const Script& script, std::vector<std::string> keys,
                               std::vector<std::string> args, Callback done, Dispatch dispatch) {
  auto call = std::make_shared<EvalCall>(EvalCall{script, {}, std::nullopt, std::move(done)});
  call->args.reserve(3 + keys.size() + args.size());
  call->args.push_back("EVALSHA");
  call->args.push_back(script.sha1());
  call->args.push_back(std::to_string(keys.size()));
  for (std::string& key : keys) call->args.push_back(std::move(key));
  for (std::string& arg : args) call->args.push_back(std::move(arg));
  if (!keys.empty()) call->key_index = 3;

  Impl* impl = impl_.get();
  auto on_reply = [impl, call](StatusOr<Reply> result) {
    if (result.ok() && is_noscript(*result)) {
      // The server lost its script cache: EVAL runs the script and caches it again.
      bump(impl->counters_.script_reloads);
      call->args[0] = "EVAL";
      call->args[1] = call->script.source();
      impl->submit(call->args, call->key_index, ErrorReplies::kAsStatus,
                   Completion{.callback = std::move(call->done)});
      return;
    }
    if (result.ok() && result->is_error()) {
      run_callback(call->done, error_reply_status(result->as_string()));
      return;
    }
    run_callback(call->done, std::move(result));
  };
  impl->submit(call->args, call->key_index, ErrorReplies::kAsReply,
               Completion{.callback = std::move(on_reply),
                          .submitter_writes = dispatch == Dispatch::kImmediate});
}

namespace {

Status blocking_on_io_thread() {
  return Status(StatusCode::kFailedPrecondition,
                "redis: blocking call from a client callback would deadlock; use the async form");
}

}  // namespace

StatusOr<Reply> Client::command(std::vector<std::string> args) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->execute_and_wait(args, std::nullopt);
}

StatusOr<Reply> Client::execute(Request request) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->execute_and_wait(request.args, request.key_index);
}

StatusOr<Reply> Client::eval_script(const Script& script, std::vector<std::string> keys,
                                    std::vector<std::string> args) {
  if (impl_->on_io_thread()) return blocking_on_io_thread();
  return impl_->eval_and_wait(script, keys, args);
}

}  // namespace sluice::redis
