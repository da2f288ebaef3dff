#include "sluice/core/clock.h"

#include <chrono>

namespace sluice {

Micros SystemClock::now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const SystemClock& SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

Micros SteadyClock::now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const SteadyClock& SteadyClock::instance() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace sluice
