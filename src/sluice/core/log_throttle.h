// LogThrottle: which occurrences of a repeated event to report, so a failure that hits every
// request (a revoked store credential) is logged loudly at once, and then about once per
// interval instead of once per request. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"

namespace sluice {

class LogThrottle {
 public:
  // `clock` outlives the throttle. `interval` > 0.
  LogThrottle(const Clock& clock, Micros interval) : clock_(clock), interval_(interval) {}

  // Counts one occurrence. When it is to be reported (the first, or the first once `interval`
  // has passed since the last report), returns how many occurrences this report covers: itself
  // plus those held back since the last one. Otherwise nullopt.
  std::optional<std::uint64_t> occurred();

 private:
  const Clock& clock_;
  const Micros interval_;
  Mutex mutex_;
  std::optional<Micros> last_report_ SLUICE_GUARDED_BY(mutex_);
  std::uint64_t held_back_ SLUICE_GUARDED_BY(mutex_) = 0;
};

}  // namespace sluice
