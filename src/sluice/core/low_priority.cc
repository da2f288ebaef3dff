#include "sluice/core/low_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <deque>
#include <thread>
#include <vector>

#include "sluice/core/mutex.h"

namespace sluice {
namespace {

// Two long-lived threads at the lowest priority take the work in turn. Long-lived, not one per
// call: the allocator keeps a thread's freed memory for reuse by that thread (a hash's 64 MiB),
// so a fresh thread per call would leave a fresh 64 MiB behind each time until it decays.
class LowPriorityThreads {
 public:
  static constexpr int kThreads = 2;

  LowPriorityThreads() {
    for (int i = 0; i < kThreads; ++i) threads_.emplace_back([this] { serve(); });
  }
  ~LowPriorityThreads() {
    {
      MutexLock lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  void run(const std::function<void()>& work) {
    Task task{.work = &work};
    {
      MutexLock lock(mutex_);
      queue_.push_back(&task);
    }
    wake_.notify_one();
    MutexLock lock(mutex_);
    while (!task.done) task_done_.wait(lock);
  }

 private:
  struct Task {
    const std::function<void()>* work = nullptr;
    bool done = false;  // guarded by mutex_
  };

  void serve() {
    // Only this thread's priority changes (setpriority on a thread id); should it fail, the work
    // still runs, at the process's priority: slower decisions beat a refused password change.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kLowPriorityNice);
    MutexLock lock(mutex_);
    while (true) {
      while (!stopping_ && queue_.empty()) wake_.wait(lock);
      if (queue_.empty()) return;  // stopping, and nothing left to run
      Task* task = queue_.front();
      queue_.pop_front();
      lock.unlock();
      (*task->work)();
      lock.lock();
      task->done = true;
      task_done_.notify_all();
    }
  }

  Mutex mutex_;
  CondVar wake_;       // work queued, or stopping
  CondVar task_done_;  // a task finished
  std::deque<Task*> queue_ SLUICE_GUARDED_BY(mutex_);
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace

void run_at_low_priority(const std::function<void()>& work) {
  static LowPriorityThreads threads;
  threads.run(work);
}

}  // namespace sluice
