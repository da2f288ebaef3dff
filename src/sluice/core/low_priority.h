// run_at_low_priority: CPU-heavy work that must never delay decisions — a password hash is tens
// of milliseconds of a core — runs on a thread of its own at the lowest scheduling priority, so
// the I/O threads that answer decisions preempt it whenever they have work (issue 32: argon2 runs
// on the server's cores were what moved decision latency most under mixed abuse).
#pragma once

#include <functional>

namespace sluice {

// The nice value the work runs at (Linux: per thread; raising one's own needs no privilege).
inline constexpr int kLowPriorityNice = 19;

// Runs `work` to its end on one of two long-lived threads at nice kLowPriorityNice (in turn with
// other callers' work) and returns after it; the calling thread only waits. `work` must not
// throw. Thread-safe.
void run_at_low_priority(const std::function<void()>& work);

}  // namespace sluice
