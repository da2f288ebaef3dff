#include "sluice/core/work_queue.h"

namespace sluice {

WorkQueue::WorkQueue(int threads, std::size_t capacity) : capacity_(capacity) {
  for (int i = 0; i < (threads < 1 ? 1 : threads); ++i) workers_.emplace_back([this] { work(); });
}

WorkQueue::~WorkQueue() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

bool WorkQueue::post(std::function<void()> task) {
  {
    MutexLock lock(mutex_);
    if (tasks_.size() >= capacity_) return false;
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

void WorkQueue::work() {
  while (true) {
    std::function<void()> task;
    {
      MutexLock lock(mutex_);
      while (!stopping_ && tasks_.empty()) ready_.wait(lock);
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace sluice
