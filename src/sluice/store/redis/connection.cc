#include "sluice/store/redis/connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <optional>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/resp_writer.h"

namespace sluice::redis::internal {

std::chrono::microseconds micros(Micros value) { return std::chrono::microseconds(value); }

std::string millis_text(Micros value) {
  if (value % kMicrosPerMilli == 0) return std::to_string(value / kMicrosPerMilli) + "ms";
  return std::to_string(value) + "us";
}

void run_callback(Callback& done, StatusOr<Reply> result) {
  if (!done) return;
  try {
    done(std::move(result));
  } catch (...) {
    // A throwing callback must not take the connection (or the I/O thread) down with it.
  }
}

void complete(Completion& done, StatusOr<Reply> result) {
  if (done.waiter != nullptr) {
    done.waiter->set(std::move(result));
  } else {
    run_callback(done.callback, std::move(result));
  }
}

Connection::~Connection() {
  if (reader_ != nullptr) redisReaderFree(reader_);
}

void Connection::start() {
  asio::post(strand_, [self = shared_from_this()] { self->connect(); });
}

void Connection::close() {
  asio::post(strand_, [self = shared_from_this()] {
    {
      MutexLock lock(self->mu_);
      self->set_state_locked(ConnState::kClosed);
    }
    self->fail(Status(StatusCode::kCancelled, "redis client is shutting down"));
  });
}

Status Connection::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

bool Connection::try_submit(std::string_view formatted, Completion& done, ErrorReplies errors,
                            bool asking) {
  const SteadyClock::time_point deadline = SteadyClock::now() + micros(options_.command_timeout);
  // Through TLS only the strand writes: OpenSSL's state is not shared across threads.
  const bool writes_itself =
      tls_context_ == nullptr && (done.waiter != nullptr || done.submitter_writes);
  bool write_here = false;
  bool post_write = false;
  bool arm = false;
  std::uint64_t gen = 0;
  {
    MutexLock lock(mu_);
    if (state_ == ConnState::kBackoff || state_ == ConnState::kClosed) return false;
    if (asking) {
      // ASKING holds for the next command on this connection only: both leave in one write,
      // and its "+OK" goes to a completion that discards it.
      static constexpr std::string_view kAsking = "*1\r\n$6\r\nASKING\r\n";
      outbox_ += kAsking;
      ++outbox_count_;
      pending_.push_back(Pending{Completion{}, deadline, ErrorReplies::kAsStatus});
    }
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

void Connection::set_state_locked(ConnState state) {
  state_ = state;
  visible_state_.store(state, std::memory_order_release);
}

std::string& Connection::send_buffer() {
  thread_local std::string buffer;
  return buffer;
}

void Connection::write_from_caller(std::uint64_t gen) {
  std::string& sending = send_buffer();
  for (;;) {
    {
      MutexLock lock(mu_);
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
      MutexLock lock(mu_);
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

Connection::SendResult Connection::send_now(std::uint64_t gen, std::string_view data) {
  MutexLock lock(write_mu_);
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

void Connection::arm_deadline_for_front() {
  SteadyClock::time_point when;
  {
    MutexLock lock(mu_);
    if (pending_.empty()) {
      deadline_armed_ = false;
      return;
    }
    when = pending_.front().deadline;
  }
  arm_deadline(when);
}

void Connection::write_all(asio::const_buffer bytes, IoHandler handler) {
  if (tls_) {
    asio::async_write(*tls_, bytes,
                      [tls = tls_, handler = std::move(handler)](
                          const boost::system::error_code& ec, std::size_t n) { handler(ec, n); });
  } else {
    asio::async_write(socket_, bytes, std::move(handler));
  }
}

void Connection::do_write() {
  bool arm = false;
  SteadyClock::time_point arm_at;
  {
    MutexLock lock(mu_);
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
  write_all(asio::buffer(writing_),
            [self = shared_from_this(), gen](const boost::system::error_code& ec, std::size_t) {
              if (gen != self->gen_) return;
              if (ec) {
                self->fail(self->lost(ec));
                return;
              }
              self->do_write();
            });
}

void Connection::arm_deadline(SteadyClock::time_point when) {
  deadline_timer_.expires_at(when);
  const std::uint64_t gen = gen_;
  deadline_timer_.async_wait([self = shared_from_this(), gen](const boost::system::error_code& ec) {
    if (gen != self->gen_ || ec == asio::error::operation_aborted) return;
    self->on_deadline();
  });
}

void Connection::on_deadline() {
  const SteadyClock::time_point now = SteadyClock::now();
  Completion expired;
  std::optional<SteadyClock::time_point> next;
  {
    MutexLock lock(mu_);
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

void Connection::start_read() {
  IoHandler on_data = [self = shared_from_this(), gen = gen_](const boost::system::error_code& ec,
                                                              std::size_t size) {
    if (gen != self->gen_) return;
    if (ec) {
      self->fail(self->lost(ec));
      return;
    }
    self->on_read(size);
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(read_buffer_), [tls = tls_, on_data = std::move(on_data)](
                                                          const boost::system::error_code& ec,
                                                          std::size_t size) { on_data(ec, size); });
  } else {
    socket_.async_read_some(asio::buffer(read_buffer_), std::move(on_data));
  }
}

void Connection::on_read(std::size_t size) {
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
      const HandshakeStep& step = handshake_steps_[handshake_steps_.size() - handshake_remaining_];
      if (step.probe) {
        step.probe(reply);
      } else if (reply.is_error()) {
        const Status status = error_reply_status(reply.as_string());
        fail(Status(status.code(), "handshake with redis " + endpoint_name_ + " failed at " +
                                       step.name + ": " + status.message()));
        return;
      }
      if (--handshake_remaining_ > 0) continue;
      if (Status decided = decide_engine(); !decided.ok()) {
        fail(decided);
        return;
      }
      become_ready();
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

void Connection::flush_deferred() {
  {
    MutexLock lock(mu_);
    if (state_ != ConnState::kReady || write_in_flight_ || outbox_.empty()) return;
    write_in_flight_ = true;
  }
  do_write();
}

bool Connection::deliver() {
  completions_.clear();
  bool unexpected = false;
  bool write_left_behind = false;
  {
    MutexLock lock(mu_);
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

Status Connection::lost(const boost::system::error_code& ec) const {
  if (ec == asio::error::eof) {
    return unavailable("connection to redis " + endpoint_name_ + " closed by the server");
  }
  return unavailable("connection to redis " + endpoint_name_ + " lost: " + ec.message());
}

Status Connection::protocol_error() const {
  return unavailable("protocol error from redis " + endpoint_name_ + ": " +
                     std::string(reader_->errstr));
}

void Connection::fail(const Status& why) {
  std::deque<Pending> failed;
  bool closed = false;
  {
    MutexLock lock(mu_);
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
    MutexLock lock(write_mu_);
    boost::system::error_code ignored;
    socket_.close(ignored);
    socket_gen_ = 0;
  }
  tls_.reset();  // pending handlers hold their own reference
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

}  // namespace sluice::redis::internal
