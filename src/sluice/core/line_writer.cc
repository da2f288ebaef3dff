#include "sluice/core/line_writer.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "sluice/core/mutex.h"

namespace sluice {

LineWriter::LineWriter(int fd, LineWriterOptions options)
    : fd_(fd), options_(options), thread_([this] { run(); }) {}

LineWriter::~LineWriter() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void LineWriter::write(std::string_view line) {
  bool wake = false;
  {
    MutexLock lock(mutex_);
    if (pending_.size() + line.size() + 1 > options_.max_buffered_bytes) {
      ++dropped_;
      return;
    }
    // The first line of a batch starts the writer's interval; a full buffer ends it. No wake-up
    // for the lines between, and none at all while nothing is logged.
    wake = pending_.empty();
    pending_.append(line);
    pending_.push_back('\n');
    wake = wake || pending_.size() >= options_.flush_bytes;
  }
  if (wake) wake_.notify_one();
}

void LineWriter::flush() {
  MutexLock lock(mutex_);
  // Everything queued so far goes out in the batch after the ones already taken.
  const std::uint64_t target = queued_batches_ + (pending_.empty() ? 0 : 1);
  flush_requested_ = true;
  wake_.notify_one();
  while (written_batches_ < target) written_.wait(lock);
}

std::uint64_t LineWriter::dropped() const {
  MutexLock lock(mutex_);
  return dropped_;
}

void LineWriter::run() {
  std::string batch;
  MutexLock lock(mutex_);
  for (;;) {
    // Idle until a line, a flush or the end comes: no timed wake-ups with nothing to write.
    while (!stopping_ && !flush_requested_ && pending_.empty()) wake_.wait(lock);
    // Lines wait for company (one write(2) for many) unless enough are here or someone waits.
    const auto company_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(options_.flush_interval);
    while (!stopping_ && !flush_requested_ && pending_.size() < options_.flush_bytes &&
           wake_.wait_until(lock, company_until)) {
    }
    flush_requested_ = false;
    if (pending_.empty()) {
      if (stopping_) return;
      continue;
    }
    batch.clear();
    batch.swap(pending_);
    ++queued_batches_;
    lock.unlock();
    write_all(batch);
    lock.lock();
    ++written_batches_;
    written_.notify_all();
  }
}

bool LineWriter::write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace sluice
