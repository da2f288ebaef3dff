// new_unique_id: 128 bits from OpenSSL's CSPRNG as 32 hex digits, distinct across calls, threads
// and forked processes (a per-thread mt19937_64 continued the same sequence in parent and child).
#include "sluice/store/store.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace sluice::store {
namespace {

TEST(LeaseIdTest, IsThirtyTwoLowercaseHexDigits) {
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_unique_id();
    ASSERT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  }
}

TEST(LeaseIdTest, IdsFromManyThreadsAreDistinct) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10'000;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < kPerThread; ++i) ids[t].push_back(new_unique_id());
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<std::string> distinct;
  for (const auto& list : ids) distinct.insert(list.begin(), list.end());
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kThreads * kPerThread));
}

TEST(LeaseIdTest, ForkedProcessesDrawDifferentIds) {
  (void)new_unique_id();  // the generator is set up before the fork, as in a forking server
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string id = new_unique_id();
    const bool written =
        ::write(pipe_fds[1], id.data(), id.size()) == static_cast<ssize_t>(id.size());
    ::_exit(written ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  const std::string parent_id = new_unique_id();
  std::string child_id(32, '\0');
  std::size_t read_so_far = 0;
  while (read_so_far < child_id.size()) {
    const ssize_t n =
        ::read(pipe_fds[0], child_id.data() + read_so_far, child_id.size() - read_so_far);
    if (n <= 0) break;
    read_so_far += static_cast<std::size_t>(n);
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(read_so_far, child_id.size());
  EXPECT_NE(parent_id, child_id);
}

}  // namespace
}  // namespace sluice::store
