#include "sluice/core/line_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

namespace sluice {
namespace {

// A temporary file, read back whole.
class TempFile {
 public:
  TempFile() : file_(std::tmpfile()) {}
  ~TempFile() { std::fclose(file_); }
  int fd() const { return fileno(file_); }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::string text(static_cast<std::size_t>(::lseek(fd(), 0, SEEK_END)), '\0');
    EXPECT_EQ(::pread(fd(), text.data(), text.size(), 0), static_cast<ssize_t>(text.size()));
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "the last line is not whole";
    return out;
  }

 private:
  std::FILE* file_;
};

constexpr Micros kNever = 3600LL * 1'000'000;  // no timed flush within a test

TEST(LineWriterTest, FlushWritesEveryLineQueuedBeforeItInOrder) {
  TempFile file;
  LineWriter writer(file.fd(), {.flush_interval = kNever, .flush_bytes = 1 << 30});
  writer.write("first");
  writer.write("second");
  writer.flush();
  EXPECT_EQ(file.lines(), (std::vector<std::string>{"first", "second"}));
  writer.write("third");
  writer.flush();
  EXPECT_EQ(file.lines(), (std::vector<std::string>{"first", "second", "third"}));
  writer.flush();  // nothing queued: returns at once
}

TEST(LineWriterTest, LinesFromManyThreadsArriveWholeAndOnce) {
  TempFile file;
  constexpr int kThreads = 8;
  constexpr int kLines = 5000;
  {
    // A small flush_bytes: many batches, written while the threads keep adding.
    LineWriter writer(file.fd(), {.flush_interval = kNever, .flush_bytes = 4096});
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&writer, t] {
        for (int i = 0; i < kLines; ++i) {
          writer.write("thread " + std::to_string(t) + " line " + std::to_string(i));
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(writer.dropped(), 0U);
  }  // the destructor writes the rest
  const std::vector<std::string> lines = file.lines();
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kLines));
  const std::set<std::string> distinct(lines.begin(), lines.end());
  EXPECT_EQ(distinct.size(), lines.size());
  EXPECT_TRUE(distinct.count("thread 7 line 4999"));
}

TEST(LineWriterTest, BeyondTheBufferBoundLinesAreDroppedAndCounted) {
  TempFile file;
  const std::string line(100, 'x');  // 101 bytes with its newline
  {
    LineWriter writer(
        file.fd(), {.flush_interval = kNever, .flush_bytes = 1 << 30, .max_buffered_bytes = 500});
    for (int i = 0; i < 10; ++i) writer.write(line);
    EXPECT_EQ(writer.dropped(), 6U);  // 4 × 101 = 404 fit; a fifth would make 505
  }
  EXPECT_EQ(file.lines().size(), 4U);
}

TEST(LineWriterTest, AFailingDescriptorNeitherBlocksNorCrashes) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody reads: write(2) fails with EPIPE (SIGPIPE is ignored by the test)
  std::signal(SIGPIPE, SIG_IGN);
  {
    LineWriter writer(fds[1], {.flush_interval = kNever});
    writer.write("lost");
    writer.flush();
  }
  ::close(fds[1]);
}

}  // namespace
}  // namespace sluice
