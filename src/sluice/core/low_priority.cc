#include "sluice/core/low_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <thread>

namespace sluice {

void run_at_low_priority(const std::function<void()>& work) {
  std::thread worker([&work] {
    // Only this thread's priority changes (setpriority on a thread id). Should it fail, the work
    // still runs, at the caller's priority: slower decisions beat a refused password change.
    (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kLowPriorityNice);
    work();
  });
  worker.join();
}

}  // namespace sluice
