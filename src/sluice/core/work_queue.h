// WorkQueue: a few threads for work that blocks, kept apart from the threads that must not: the
// admin API's SQL round trips and argon2 password hashing (≈64 MiB and 0.1–0.3 s of one core
// each), so a burst of logins never delays a rate-limit decision; the library's asynchronous
// calls to a remote server. Bounded, so a burst cannot queue unbounded memory: a full queue
// refuses new work instead.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace sluice
