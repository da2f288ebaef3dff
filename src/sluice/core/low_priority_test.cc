#include "sluice/core/low_priority.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <thread>

namespace sluice {
namespace {

int own_nice() { return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())); }

TEST(LowPriorityTest, RunsTheWorkToItsEndOnAnotherThreadAtTheLowestPriority) {
  const int caller_nice = own_nice();
  std::thread::id ran_on;
  int ran_at = caller_nice;
  run_at_low_priority([&] {
    ran_on = std::this_thread::get_id();
    ran_at = own_nice();
  });
  EXPECT_NE(ran_on, std::thread::id());  // it ran, and before the call returned
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(ran_at, kLowPriorityNice);
  EXPECT_EQ(own_nice(), caller_nice);  // the caller's priority is its own still
}

}  // namespace
}  // namespace sluice
