// sluice::redis::internal::RefreshThrottle: how the cluster and sentinel routers re-read where
// things are (a slot map, a master's address): at most one read at a time, and reads started at
// least `min_interval` apart. A request while a read runs or is scheduled is absorbed; one that
// comes too soon after the last start is scheduled for when it is due. So a storm of failures
// costs one read per interval, and the last failure is never left without a read after it.
// Internal to the client. Thread-safe.
#pragma once

#include <chrono>
#include <functional>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/connection.h"

namespace sluice::redis::internal {

class RefreshThrottle {
 public:
  // `start` begins a read on an I/O thread; whoever ends the read calls done().
  RefreshThrottle(asio::io_context& io, std::chrono::microseconds min_interval,
                  std::function<void()> start);

  void request();
  void done();
  // No read starts after this (a scheduled one is cancelled).
  void close();

 private:
  asio::io_context& io_;
  const std::chrono::microseconds min_interval_;
  const std::function<void()> start_;
  Mutex mu_;
  bool running_ SLUICE_GUARDED_BY(mu_) = false;
  bool scheduled_ SLUICE_GUARDED_BY(mu_) = false;
  bool closed_ SLUICE_GUARDED_BY(mu_) = false;
  SteadyClock::time_point last_start_ SLUICE_GUARDED_BY(mu_){};
  asio::steady_timer timer_
      SLUICE_GUARDED_BY(mu_);  // guarded by mu_ (Asio timers are not thread-safe)
};

}  // namespace sluice::redis::internal
