// IoWorkers: the I/O threads of one server and the accept loop that feeds them, as the HTTP and
// gRPC servers both run them:
//   - one io_context per thread, with the connections living on it (touched only there);
//   - new connections dealt to the threads in turn;
//   - one sweep timer per thread that checks every connection's deadlines, so no request arms a
//     timer of its own;
//   - an accept loop that survives running out of descriptors: the listening socket stays open
//     and is asked again after a pause, and a reserved descriptor lets one waiting client be
//     accepted and closed at once, so it learns now instead of waiting in the backlog (issue 32
//     H1: a server that stops accepting after one EMFILE is down for good).
// `Connection` is the server's connection type; IoWorkers holds only pointers to it.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)
#include <vector>

#include "sluice/core/status_macros.h"
#include "sluice/server/net/listener.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::server {

// How often a server checks its connections' deadlines: a tenth of the shortest timeout, between
// 5 ms and 1 s.
inline std::chrono::microseconds sweep_interval(Micros shortest_timeout) {
  return std::chrono::microseconds(
      std::clamp<Micros>(shortest_timeout / 10, 5 * kMicrosPerMilli, kMicrosPerSecond));
}

template <typename Connection>
class IoWorkers {
 public:
  using tcp = boost::asio::ip::tcp;

  // One I/O thread with its own io_context and the connections living on it.
  struct Worker {
    boost::asio::io_context io{1};
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard;
    std::optional<boost::asio::steady_timer> sweep;
    std::thread thread;
    std::unordered_set<Connection*> connections;  // touched only on `thread`
  };

  // Runs on the new connection's worker thread, unless the server has begun to drain (the
  // socket then closes unseen).
  using Accepted = std::function<void(Worker&, tcp::socket)>;
  // Runs on each connection's thread at every sweep; it may close the connection.
  using Tick = std::function<void(Connection&)>;

  IoWorkers() = default;
  IoWorkers(const IoWorkers&) = delete;
  IoWorkers& operator=(const IoWorkers&) = delete;
  ~IoWorkers() { join(); }

  // Makes `threads` (>= 1) workers and listens on `host`:`port` (open_listener's errors, naming
  // `setting`) on the first one's io_context. Nothing runs before start().
  Status open(int threads, const std::string& host, std::uint16_t port, std::string_view setting) {
    for (int i = 0; i < std::max(threads, 1); ++i) {
      auto worker = std::make_unique<Worker>();
      worker->guard.emplace(worker->io.get_executor());
      worker->sweep.emplace(worker->io);
      workers_.push_back(std::move(worker));
    }
    SLUICE_ASSIGN_OR_RETURN(tcp::acceptor listening,
                            open_listener(workers_[0]->io, host, port, setting));
    acceptor_.emplace(std::move(listening));
    boost::system::error_code ec;
    port_ = acceptor_->local_endpoint(ec).port();
    accept_retry_.emplace(workers_[0]->io);
    reserve_.open();
    return Status();
  }

  std::uint16_t port() const { return port_; }
  // Since drain() began.
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  std::uint64_t accept_errors() const { return accept_errors_.load(); }
  const std::vector<std::unique_ptr<Worker>>& workers() const { return workers_; }

  // Starts accepting, the threads, and each thread's sweep every `interval`.
  void start(std::chrono::microseconds interval, Accepted accepted, Tick tick) {
    interval_ = interval;
    accepted_ = std::move(accepted);
    tick_ = std::move(tick);
    accept_next();
    for (auto& worker : workers_) {
      Worker* w = worker.get();
      sweep(*w);
      w->thread = std::thread([w] { w->io.run(); });
    }
  }

  // Graceful shutdown's first half: new connections are no longer accepted (their sockets close
  // unseen from now on), every open one gets connection.drain() on its thread, and the caller
  // waits up to `grace` for `open()` (the server's count of open connections) to reach 0.
  template <typename OpenCount>
  void drain(Micros grace, OpenCount open) {
    draining_.store(true, std::memory_order_release);
    if (workers_.empty()) return;
    boost::asio::post(workers_[0]->io, [this] {
      boost::system::error_code ec;
      if (acceptor_) acceptor_->close(ec);
      if (accept_retry_) accept_retry_->cancel();
    });
    for_each_connection([](Connection& connection) { connection.drain(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(grace);
    while (open() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // Runs fn(connection) on every worker's thread for each connection open when it runs (fn may
  // close it).
  template <typename Fn>
  void for_each_connection(Fn fn) {
    for (auto& worker : workers_) {
      boost::asio::post(worker->io, [w = worker.get(), fn] {
        // fn may close, which erases from the set: iterate over a copy.
        const std::vector<Connection*> open(w->connections.begin(), w->connections.end());
        for (Connection* connection : open) fn(*connection);
      });
    }
  }

  // Closes every connection (connection.close()) on its thread, then stops the threads and joins
  // them; handlers still pending (and the connections they hold) go with the io_contexts.
  // Idempotent; the destructor calls it.
  void join() {
    if (workers_.empty()) return;
    for (auto& worker : workers_) {
      boost::asio::post(worker->io, [w = worker.get()] {
        const std::vector<Connection*> open(w->connections.begin(), w->connections.end());
        for (Connection* connection : open) connection->close();
        w->sweep->cancel();
      });
      worker->guard.reset();
    }
    // Stop whatever still waits (timers of parked requests), after the closes above ran.
    for (auto& worker : workers_) {
      if (worker->thread.joinable()) {
        boost::asio::post(worker->io, [w = worker.get()] { w->io.stop(); });
        worker->thread.join();
      }
    }
    acceptor_.reset();
    accept_retry_.reset();
    workers_.clear();
    reserve_.close();
  }

 private:
  void accept_next() {
    Worker& target = *workers_[next_];
    next_ = (next_ + 1) % workers_.size();
    acceptor_->async_accept(
        target.io, [this, &target](boost::system::error_code ec, tcp::socket socket) {
          if (ec == boost::asio::error::operation_aborted || !acceptor_->is_open()) return;
          if (ec) return on_accept_error(ec);
          boost::asio::post(target.io, [this, &target, socket = std::move(socket)]() mutable {
            if (draining()) return;  // the socket closes as it goes out of scope
            accepted_(target, std::move(socket));
          });
          accept_next();
        });
  }

  void on_accept_error(const boost::system::error_code& ec) {
    accept_errors_.fetch_add(1);
    if (ec == boost::asio::error::no_descriptors || ec.value() == ENFILE) {
      reserve_.shed_one_waiting(*acceptor_);
    }
    accept_retry_->expires_after(std::chrono::milliseconds(50));
    accept_retry_->async_wait([this](boost::system::error_code wait_ec) {
      if (!wait_ec && acceptor_->is_open()) accept_next();
    });
  }

  void sweep(Worker& worker) {
    worker.sweep->expires_after(interval_);
    worker.sweep->async_wait([this, &worker](boost::system::error_code ec) {
      if (ec) return;
      // tick_ may close, which erases from the set: iterate over a copy.
      const std::vector<Connection*> open(worker.connections.begin(), worker.connections.end());
      for (Connection* connection : open) tick_(*connection);
      sweep(worker);
    });
  }

  std::vector<std::unique_ptr<Worker>> workers_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<boost::asio::steady_timer> accept_retry_;
  DescriptorReserve reserve_;
  Accepted accepted_;
  Tick tick_;
  std::chrono::microseconds interval_{100'000};
  std::size_t next_ = 0;  // touched only on the first worker's thread (the accept loop)
  std::uint16_t port_ = 0;
  std::atomic<bool> draining_{false};
  std::atomic<std::uint64_t> accept_errors_{0};
};

}  // namespace sluice::server
