#include "sluice/simulate/recorder.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "sluice/core/status_macros.h"

namespace sluice::simulate {
namespace {

// splitmix64's finalizer: spreads std::hash's bits so a threshold on them samples evenly.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t threshold(double sample) {
  if (sample >= 1) return UINT64_MAX;
  return static_cast<std::uint64_t>(sample * 18446744073709551616.0);  // sample × 2^64
}

// HMAC-SHA-256 of `subject` under `key`, the first 16 bytes as 32 hex digits.
std::string hashed_subject(std::string_view key, std::string_view subject) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(subject.data()), subject.size(), digest, &size);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned int i = 0; i < 16 && i < size; ++i) {
    text.push_back(kHex[digest[i] >> 4]);
    text.push_back(kHex[digest[i] & 15]);
  }
  return text;
}

}  // namespace

StatusOr<std::unique_ptr<Recorder>> Recorder::start(RecorderOptions options) {
  if (options.directory.empty()) return invalid_argument("record_dir: required");
  if (!(options.sample >= 0 && options.sample <= 1)) {
    return invalid_argument("record_sample: must be from 0 to 1");
  }
  if (options.subjects == SubjectStorage::kHashed && options.key.empty()) {
    return invalid_argument("record_key: required to store subjects hashed");
  }
  if (options.queue_capacity == 0) return invalid_argument("record_queue: must be at least 1");
  if (options.max_file_bytes == 0 || options.max_total_bytes < options.max_file_bytes) {
    return invalid_argument(
        "record_max_bytes: must be at least one file's bytes (record_file_bytes)");
  }
  std::error_code error;
  std::filesystem::create_directories(options.directory, error);
  if (error) {
    return invalid_argument("record_dir: " + options.directory + ": " + error.message());
  }
  return std::unique_ptr<Recorder>(new Recorder(std::move(options)));
}

Recorder::Recorder(RecorderOptions options)
    : options_(std::move(options)),
      sample_below_(threshold(options_.sample)),
      wake_at_(std::max<std::size_t>(1, options_.queue_capacity / 2)),
      seed_(std::hash<std::string>{}(options_.key)) {
  writer_ = std::thread([this] { run(); });
}

Recorder::~Recorder() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  writer_.join();
}

bool Recorder::sampled(std::string_view subject) const {
  if (sample_below_ == UINT64_MAX) return true;
  return mix(std::hash<std::string_view>{}(subject) ^ seed_) < sample_below_;
}

void Recorder::record(Micros time, std::string_view policy, std::string_view app,
                      std::string_view subject, std::int64_t cost, RecordedOutcome outcome) {
  if (!sampled(subject)) return;
  bool wake = false;
  {
    MutexLock lock(mutex_);
    if (queue_.size() >= options_.queue_capacity) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_.push_back({.time = time,
                      .policy = std::string(policy),
                      .app = std::string(app),
                      .subject = std::string(subject),
                      .cost = cost,
                      .outcome = outcome});
    ++queued_seq_;
    // Wake the writer only for the first record of a batch (it then gathers for kWriteDelay)
    // and when the queue is half full: a wake per record costs the deciding thread a futex
    // call and the writer a write(2) per record, several µs of CPU per decision (measured).
    wake = queue_.size() == 1 || queue_.size() == wake_at_;
  }
  recorded_.fetch_add(1, std::memory_order_relaxed);
  if (wake) changed_.notify_all();  // all: flush() waits on it too
}

void Recorder::flush() {
  MutexLock lock(mutex_);
  const std::uint64_t target = queued_seq_;
  ++flush_waiters_;  // the writer writes at once rather than gathering for kWriteDelay
  changed_.notify_all();
  while (written_seq_ < target) changed_.wait(lock);
  --flush_waiters_;
}

RecorderStats Recorder::stats() const {
  return {.recorded = recorded_.load(),
          .written = written_.load(),
          .dropped = dropped_.load(),
          .bytes = bytes_.load(),
          .files = files_opened_.load(),
          .errors = errors_.load()};
}

void Recorder::run() {
  std::vector<Record> batch;
  for (;;) {
    {
      MutexLock lock(mutex_);
      while (queue_.empty() && !stopping_) changed_.wait(lock);
      if (queue_.empty()) break;  // stopping, and everything is written
      // Gather a batch: one write(2) for many records, unless a flush, the stop or a half-full
      // queue asks for it now.
      const auto deadline = std::chrono::steady_clock::now() + kWriteDelay;
      while (!stopping_ && flush_waiters_ == 0 && queue_.size() < wake_at_ &&
             changed_.wait_until(lock, deadline)) {
      }
      batch.swap(queue_);
    }
    if (options_.before_write) options_.before_write();
    write_batch(batch);
    {
      MutexLock lock(mutex_);
      written_seq_ += batch.size();
    }
    batch.clear();
    changed_.notify_all();
  }
  // bytes() counted what was buffered too, so closing adds nothing to bytes_.
  if (file_ != nullptr && !file_->close().ok()) errors_.fetch_add(1);
}

Status Recorder::open_file(Micros first) {
  const std::string path =
      (std::filesystem::path(options_.directory) /
       ("traffic-" + std::to_string(first) + "-" + std::to_string(sequence_++) + ".sltr"))
          .string();
  SLUICE_ASSIGN_OR_RETURN(BinaryWriter writer, BinaryWriter::create(path));
  file_ = std::make_unique<BinaryWriter>(std::move(writer));
  file_path_ = path;
  files_opened_.fetch_add(1);
  return Status();
}

void Recorder::enforce_total() {
  std::uint64_t total = file_ != nullptr ? file_->bytes() : 0;
  for (const auto& [path, bytes] : files_) total += bytes;
  while (total > options_.max_total_bytes && !files_.empty()) {
    std::error_code ignored;  // a file someone else removed is gone either way
    std::filesystem::remove(files_.front().first, ignored);
    total -= files_.front().second;
    files_.pop_front();
  }
}

void Recorder::write_batch(std::vector<Record>& batch) {
  std::uint64_t counted_from = file_ != nullptr ? file_->bytes() : 0;  // bytes_ has these
  std::size_t done = 0;
  for (Record& record : batch) {
    if (file_ == nullptr || file_->bytes() >= options_.max_file_bytes) {
      if (file_ != nullptr) {
        if (!file_->close().ok()) errors_.fetch_add(1);
        bytes_.fetch_add(file_->bytes() - counted_from);
        files_.emplace_back(file_path_, file_->bytes());
        file_.reset();
      }
      counted_from = 0;
      if (!open_file(record.time).ok()) break;
      enforce_total();
    }
    // The format is ordered; two threads may queue a few microseconds out of order.
    last_time_ = std::max(last_time_, record.time);
    const std::string subject = options_.subjects == SubjectStorage::kHashed
                                    ? hashed_subject(options_.key, record.subject)
                                    : std::move(record.subject);
    if (!file_->write(last_time_, subject, record.policy, record.app, record.cost, record.outcome)
             .ok()) {
      break;
    }
    ++done;
  }
  if (file_ != nullptr && done == batch.size() && !file_->flush().ok()) done = 0;
  if (done < batch.size()) {
    // A write error (a full disk): this batch's rest is lost and counted; the next batch starts
    // a new file.
    errors_.fetch_add(1);
    dropped_.fetch_add(batch.size() - done);
    file_.reset();
  }
  written_.fetch_add(done);
  if (file_ != nullptr) {
    bytes_.fetch_add(file_->bytes() - counted_from);
    enforce_total();
  }
}

}  // namespace sluice::simulate
