// TESTS ONLY: one limit of every algorithm and of every Redis script kind (both refill modes, a
// calendar window, a leaky bucket that waits), for tests that check a property of each.
#pragma once

#include <vector>

#include "sluice/algorithm/limit.h"

namespace sluice::algorithm {

inline std::vector<Limit> one_limit_of_each_kind() {
  constexpr Micros kSecond = kMicrosPerSecond;
  return {TokenBucket{.capacity = 10, .refill = 5, .period = kSecond},
          TokenBucket{.capacity = 10,
                      .refill = 10,
                      .period = 60 * kSecond,
                      .refill_mode = RefillMode::kInterval,
                      .initial = 3},
          Gcra{.rate = 10, .period = kSecond, .burst = 5},
          LeakyBucket{.rate = 10, .period = kSecond, .max_delay = 500'000},
          LeakyBucket{.rate = 3, .period = kSecond, .max_delay = 0},
          FixedWindow{.limit = 100, .window = 60 * kSecond},
          FixedWindow{.limit = 100,
                      .window = longest_period(CalendarPeriod::kDay),
                      .calendar = Calendar{.period = CalendarPeriod::kDay}},
          SlidingWindow{.limit = 100, .window = 60 * kSecond},
          SlidingLog{.limit = 7, .window = kSecond},
          Concurrency{.limit = 3, .lease_ttl = 30 * kSecond}};
}

}  // namespace sluice::algorithm
