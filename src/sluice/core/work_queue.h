// WorkQueue: a few threads for work that blocks, kept apart from the threads that must not: the
// admin API's SQL round trips and argon2 password hashing (≈64 MiB and 0.1–0.3 s of one core
// each), so a burst of logins never delays a rate-limit decision; the library's asynchronous
// calls to a remote server. Bounded, so a burst cannot queue unbounded memory: a full queue
// refuses new work instead.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "sluice/core/mutex.h"

namespace sluice {

class WorkQueue {
 public:
  // `threads` ≥ 1 workers; at most `capacity` tasks waiting.
  WorkQueue(int threads, std::size_t capacity);
  // Runs every task already queued, then joins the workers.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `task`; false (and `task` dropped) when `capacity` tasks are already waiting.
  // Thread-safe.
  bool post(std::function<void()> task);

 private:
  void work();

  const std::size_t capacity_;
  Mutex mutex_;
  CondVar ready_;
  std::deque<std::function<void()>> tasks_ SLUICE_GUARDED_BY(mutex_);
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace sluice
