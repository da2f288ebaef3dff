#include "sluice/core/log_throttle.h"

#include "sluice/core/mutex.h"

namespace sluice {

std::optional<std::uint64_t> LogThrottle::occurred() {
  const Micros now = clock_.now();
  MutexLock lock(mutex_);
  if (last_report_ && now - *last_report_ < interval_) {
    ++held_back_;
    return std::nullopt;
  }
  last_report_ = now;
  const std::uint64_t covered = held_back_ + 1;
  held_back_ = 0;
  return covered;
}

}  // namespace sluice
