#include "sluice/store/redis/refresh_throttle.h"

#include <boost/asio/post.hpp>

#include "sluice/core/mutex.h"

namespace sluice::redis::internal {

RefreshThrottle::RefreshThrottle(asio::io_context& io, std::chrono::microseconds min_interval,
                                 std::function<void()> start)
    : io_(io), min_interval_(min_interval), start_(std::move(start)), timer_(io) {}

void RefreshThrottle::request() {
  const SteadyClock::time_point now = SteadyClock::now();
  {
    MutexLock lock(mu_);
    if (closed_ || running_ || scheduled_) return;
    const SteadyClock::time_point due = last_start_ + min_interval_;
    if (now < due) {
      scheduled_ = true;
      timer_.expires_at(due);
      timer_.async_wait([this](const boost::system::error_code& ec) {
        {
          MutexLock relock(mu_);
          scheduled_ = false;
          if (ec || closed_) return;
        }
        request();
      });
      return;
    }
    running_ = true;
    last_start_ = now;
  }
  asio::post(io_, start_);
}

void RefreshThrottle::done() {
  MutexLock lock(mu_);
  running_ = false;
}

void RefreshThrottle::close() {
  MutexLock lock(mu_);
  closed_ = true;
  timer_.cancel();
}

}  // namespace sluice::redis::internal
