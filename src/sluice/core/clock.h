// Clock: the one source of "now" for in-process decisions. Injected everywhere so tests control
// time and never sleep. Redis-backed decisions use Redis's TIME instead.
#pragma once

#include <atomic>

#include "sluice/time.h"

namespace sluice {

class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch. Thread-safe.
  virtual Micros now() const = 0;
};

// Wall-clock time (CLOCK_REALTIME), so decisions agree with Redis-held state across processes.
class SystemClock final : public Clock {
 public:
  Micros now() const override;
  static const SystemClock& instance();
};

// Monotonic time (CLOCK_MONOTONIC), for deadlines and timers: never jumps when the wall clock is
// set. Its epoch is arbitrary; compare its readings only with each other.
class SteadyClock final : public Clock {
 public:
  Micros now() const override;
  static const SteadyClock& instance();
};

// A clock moved only by the test that owns it. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Micros start) : now_(start) {}
  Micros now() const override { return now_.load(std::memory_order_relaxed); }
  void set(Micros now) { now_.store(now, std::memory_order_relaxed); }
  void advance(Micros by) { now_.fetch_add(by, std::memory_order_relaxed); }

 private:
  std::atomic<Micros> now_;
};

}  // namespace sluice
