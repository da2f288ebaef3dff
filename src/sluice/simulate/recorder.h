// Recorder: writes decision requests to rotating binary recordings (binary_format.h) for later
// back-testing (docs/backtesting.md, "Recording"), off the decision path. record() only copies
// the request into a bounded queue — no I/O, no hashing beyond one 64-bit hash of the subject
// for sampling — and when the queue is full the record is dropped and counted: a slow or
// stalled disk never delays a decision. A writer thread drains the queue into files under one
// directory, rotating at max_file_bytes and deleting its own oldest files beyond
// max_total_bytes.
//
// Sampling is by subject, so a subject's sequence is recorded whole or not at all (a replay of
// part of a subject's requests would decide differently). Subjects may be stored as a keyed hash
// (HMAC-SHA-256 under `key`, 16 bytes as hex): back-tests work the same (they only compare
// subjects), but nothing shows the real key.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/simulate/binary_format.h"
#include "sluice/status.h"

namespace sluice::simulate {

enum class SubjectStorage : std::uint8_t { kClear, kHashed };

struct RecorderOptions {
  std::string directory;  // created if missing
  std::uint64_t max_file_bytes = std::uint64_t{64} << 20;
  std::uint64_t max_total_bytes = std::uint64_t{1} << 30;
  std::size_t queue_capacity = 65'536;  // records waiting for the writer
  double sample = 1.0;                  // share of subjects recorded, 0 to 1
  // Keys the sampling hash and, with kHashed, the subjects' HMAC. Required with kHashed.
  std::string key;
  SubjectStorage subjects = SubjectStorage::kClear;
  // Tests only: runs on the writer thread before each batch it writes (a stalled disk).
  std::function<void()> before_write;
};

struct RecorderStats {
  std::uint64_t recorded = 0;  // queued (sampled in)
  std::uint64_t written = 0;   // in files
  std::uint64_t dropped = 0;   // the queue was full
  std::uint64_t bytes = 0;     // written to files, in total
  std::uint64_t files = 0;     // opened so far
  std::uint64_t errors = 0;    // write errors (the batch is lost, counted in dropped)
};

class Recorder {
 public:
  // InvalidArgument naming the option: no directory, a bad sample, kHashed without a key, a
  // directory that cannot be created.
  static StatusOr<std::unique_ptr<Recorder>> start(RecorderOptions options);
  // Writes what is queued, closes the file and joins the writer.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Queues one request unless its subject is sampled out or the queue is full (then counted in
  // dropped). Never blocks on I/O. Thread-safe. Times should come in order per recorder; one
  // earlier than the file's last is written with the last time (the format is ordered).
  void record(Micros time, std::string_view policy, std::string_view app, std::string_view subject,
              std::int64_t cost, RecordedOutcome outcome);

  // Whether `subject` is in the sample (a pure function of the key and the subject).
  bool sampled(std::string_view subject) const;

  RecorderStats stats() const;
  // Blocks until everything queued before the call is in a file and flushed (tests, shutdown).
  void flush();

 private:
  struct Record {
    Micros time;
    std::string policy, app, subject;
    std::int64_t cost;
    RecordedOutcome outcome;
  };
  explicit Recorder(RecorderOptions options);
  void run();
  void write_batch(std::vector<Record>& batch);
  Status open_file(Micros first);
  void enforce_total();

  const RecorderOptions options_;
  // How long the writer gathers records after the first of a batch before it writes them.
  static constexpr std::chrono::milliseconds kWriteDelay{50};

  const std::uint64_t sample_below_;  // a subject is recorded when its mixed hash is below
  const std::size_t wake_at_;         // queue length that wakes the writer before kWriteDelay
  const std::uint64_t seed_;

  mutable Mutex mutex_;
  CondVar changed_;
  std::vector<Record> queue_ SLUICE_GUARDED_BY(mutex_);
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  int flush_waiters_ SLUICE_GUARDED_BY(mutex_) = 0;          // flush() calls waiting
  std::uint64_t queued_seq_ SLUICE_GUARDED_BY(mutex_) = 0;   // records accepted so far
  std::uint64_t written_seq_ SLUICE_GUARDED_BY(mutex_) = 0;  // of which handled by the writer

  // The writer thread's own (no lock).
  std::unique_ptr<BinaryWriter> file_;
  std::string file_path_;
  Micros last_time_ = 0;
  std::uint64_t sequence_ = 0;
  std::deque<std::pair<std::string, std::uint64_t>> files_;  // closed files: path, bytes

  std::atomic<std::uint64_t> recorded_{0}, written_{0}, dropped_{0}, bytes_{0}, files_opened_{0},
      errors_{0};
  std::thread writer_;
};

}  // namespace sluice::simulate
