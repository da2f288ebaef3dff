// A traffic file read in large blocks through zlib, which reads gzip-compressed files and plain
// ones alike (gzread passes uncompressed data through), so every reader accepts `x.jsonl.gz` as
// well as `x.jsonl`. Lines and byte spans are views into the reader's buffer, valid until the
// next call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"

struct gzFile_s;

namespace sluice::simulate {

class InputFile {
 public:
  // NotFound / InvalidArgument naming the path when it cannot be opened.
  static StatusOr<InputFile> open(const std::string& path);
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) = delete;
  InputFile(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }

  // The next line without its '\n' (a last line without one counts); false at the end.
  // InvalidArgument for a line over kMaxLine bytes; DataLoss for a corrupt gzip stream.
  StatusOr<bool> next_line(std::string_view& line);

  // Makes at least `n` bytes available at data() (fewer only at the end of the file).
  Status want(std::size_t n);
  const char* data() const { return buffer_.data() + begin_; }
  std::size_t available() const { return end_ - begin_; }
  void consume(std::size_t n) {
    begin_ += n;
    offset_ += n;
  }
  // Bytes consumed since the file's start (of the uncompressed stream): for error messages.
  std::uint64_t offset() const { return offset_; }
  bool at_end() const { return eof_ && begin_ == end_; }

  static constexpr std::size_t kMaxLine = std::size_t{16} << 20;

 private:
  InputFile(std::string path, gzFile_s* file);
  Status fill();  // reads one more block after end_, compacting first

  std::string path_;
  gzFile_s* file_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::uint64_t offset_ = 0;
  bool eof_ = false;
};

}  // namespace sluice::simulate
