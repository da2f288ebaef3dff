// Rendezvous: the calling thread waits for a value another thread delivers once — how blocking
// calls are built over asynchronous ones (Limiter::block_on, the library's Client).
// Share it by shared_ptr so that a late delivery never outlives it.
#pragma once

#include <utility>

#include "sluice/core/waiter.h"
#include "sluice/time.h"

namespace sluice {

template <typename T>
class Rendezvous {
 public:
  void deliver(T value) { waiter_.set(std::move(value)); }
  // Blocks until deliver(). `spin`: as Waiter::wait, how long a lone waiter of the process watches
  // for the value before it sleeps (0: it sleeps at once).
  T wait(Micros spin = 0) { return waiter_.wait(spin); }

 private:
  Waiter<T> waiter_;
};

}  // namespace sluice
