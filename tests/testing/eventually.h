// eventually(): how a test waits for something it can observe — a gauge reaching a value, a
// connection closing, load having run — instead of sleeping for a time it hopes is long enough.
// A sleep that is too short makes a test fail or, worse, pass without testing anything; one that
// is long enough on a loaded machine makes every run slow.
#pragma once

#include <chrono>
#include <thread>

namespace sluice::test {

// Calls `condition` until it returns true (then true) or `within` has passed (then false),
// sleeping `every` between calls. `condition` runs on the calling thread.
template <typename Condition>
bool eventually(Condition condition, std::chrono::milliseconds within,
                std::chrono::milliseconds every = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace sluice::test
