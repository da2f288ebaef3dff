// The binary recording format, version 1 (docs/backtesting.md, "The binary recording format"):
// a 16-byte header, then records, each one tag byte and unsigned LEB128 varints. Names (subjects,
// policies, apps) are defined once per file and then referred to by their file-local index, so
// an event takes about 8 bytes and a reader keeps per-subject state in arrays.
//
//   header:  "SLUICETR" | u16 LE version (1) | u16 LE header bytes (16) | u32 LE flags (0)
//   0x01 subject, 0x02 policy, 0x03 app:  varint length, that many bytes (the next index)
//   0x10 event (outcome unknown), 0x11 allowed, 0x12 denied:
//        varint µs since the previous event (the first: since the epoch), varint subject index,
//        varint cost, varint policy index + 1 (0: none), varint app index + 1 (0: none)
//
// A reader refuses a newer version or unknown flags, and names the byte offset of a bad record.
// Time order is part of the format: deltas cannot be negative.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "sluice/simulate/traffic.h"
#include "sluice/status.h"

namespace sluice::simulate {

inline constexpr std::string_view kBinaryMagic = "SLUICETR";
inline constexpr std::uint16_t kBinaryVersion = 1;
inline constexpr std::size_t kBinaryHeaderBytes = 16;

enum class RecordedOutcome : std::uint8_t { kUnknown = 0, kAllowed = 1, kDenied = 2 };

// Writes one recording to a FILE it owns (created or truncated). Interns names itself: memory
// grows with the distinct names written, not the events. Not thread-safe.
class BinaryWriter {
 public:
  // InvalidArgument naming the path when it cannot be created.
  static StatusOr<BinaryWriter> create(const std::string& path);
  BinaryWriter(BinaryWriter&& other) noexcept;
  BinaryWriter& operator=(BinaryWriter&&) = delete;
  ~BinaryWriter();

  // Appends one event. Empty policy/app: none named. InvalidArgument when `time` is earlier
  // than the previous event's or `cost` is negative; the event is then not written.
  Status write(Micros time, std::string_view subject, std::string_view policy, std::string_view app,
               std::int64_t cost, RecordedOutcome outcome = RecordedOutcome::kUnknown);
  // Hands what is buffered to the operating system (fflush). InvalidArgument on a write error.
  Status flush();
  // Flushes and closes; InvalidArgument on a write error (a full disk).
  Status close();
  std::uint64_t events() const { return events_; }
  // Bytes of the file so far, header included (written or still buffered).
  std::uint64_t bytes() const { return flushed_ + buffer_.size(); }

 private:
  BinaryWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::uint32_t define(NameTable& table, std::uint8_t tag, std::string_view name);
  void put_varint(std::uint64_t value);

  std::string path_;
  std::FILE* file_;
  TrafficNames names_;
  std::string buffer_;
  Micros previous_ = 0;
  std::uint64_t events_ = 0;
  std::uint64_t flushed_ = 0;
};

}  // namespace sluice::simulate
