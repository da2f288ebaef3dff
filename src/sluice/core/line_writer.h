// LineWriter: lines handed over by hot threads (the HTTP I/O threads' access log) and written to
// a file descriptor by a thread of its own, many lines per write(2). A caller only appends to a
// buffer under a short lock: it never waits for the disk or a slow reader of a pipe. When the
// buffer holds `max_buffered_bytes` already (the fd does not keep up), new lines are dropped and
// counted rather than letting memory or latency grow. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "sluice/core/mutex.h"
#include "sluice/time.h"

namespace sluice {

struct LineWriterOptions {
  // Lines wait at most this long (while the fd accepts them) before they are written.
  Micros flush_interval = 50'000;
  // A buffer this full is written at once, without waiting for flush_interval.
  std::size_t flush_bytes = std::size_t{64} * 1024;
  // Beyond this many bytes waiting, lines are dropped (dropped() counts them).
  std::size_t max_buffered_bytes = std::size_t{8} * 1024 * 1024;
};

class LineWriter {
 public:
  // Writes to `fd`, which stays open and owned by the caller for the writer's life.
  explicit LineWriter(int fd, LineWriterOptions options = {});
  // Writes what is buffered, then stops the thread.
  ~LineWriter();
  LineWriter(const LineWriter&) = delete;
  LineWriter& operator=(const LineWriter&) = delete;

  // Queues `line` plus a newline.
  void write(std::string_view line);
  // Blocks until every line queued before the call is written (or the fd failed).
  void flush();
  // Lines dropped because max_buffered_bytes were waiting.
  std::uint64_t dropped() const;

 private:
  void run();
  // Writes `text` whole to the fd; false when the fd refuses (then the rest is lost).
  bool write_all(const std::string& text);

  const int fd_;
  const LineWriterOptions options_;
  mutable Mutex mutex_;
  CondVar wake_;     // the writer thread: something to write, or stop
  CondVar written_;  // flush(): a batch went out
  std::string pending_ SLUICE_GUARDED_BY(mutex_);
  std::uint64_t queued_batches_ SLUICE_GUARDED_BY(mutex_) =
      0;  // batches taken from pending_ so far
  std::uint64_t written_batches_ SLUICE_GUARDED_BY(mutex_) = 0;  // of those, written (or abandoned)
  std::uint64_t dropped_ SLUICE_GUARDED_BY(mutex_) = 0;
  bool flush_requested_ SLUICE_GUARDED_BY(mutex_) = false;
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace sluice
