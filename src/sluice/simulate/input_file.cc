#include "sluice/simulate/input_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "sluice/core/status_macros.h"

namespace sluice::simulate {
namespace {

constexpr std::size_t kBlock = std::size_t{1} << 20;

}  // namespace

StatusOr<InputFile> InputFile::open(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int error = errno;
    return Status(error == ENOENT ? StatusCode::kNotFound : StatusCode::kInvalidArgument,
                  path + ": cannot open: " + std::strerror(error));
  }
  // zlib's own buffer: large reads of a large file, compressed or not.
  gzbuffer(file, kBlock);
  return InputFile(path, file);
}

InputFile::InputFile(std::string path, gzFile_s* file)
    : path_(std::move(path)), file_(file), buffer_(2 * kBlock) {}

InputFile::InputFile(InputFile&& other) noexcept
    : path_(std::move(other.path_)),
      file_(std::exchange(other.file_, nullptr)),
      buffer_(std::move(other.buffer_)),
      begin_(other.begin_),
      end_(other.end_),
      offset_(other.offset_),
      eof_(other.eof_) {}

InputFile::~InputFile() {
  if (file_ != nullptr) gzclose(file_);
}

Status InputFile::fill() {
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < kBlock) buffer_.resize(end_ + kBlock);
  const int got = gzread(file_, buffer_.data() + end_, static_cast<unsigned>(kBlock));
  if (got < 0) {
    int code = 0;
    const char* message = gzerror(file_, &code);
    return Status(StatusCode::kDataLoss, path_ + ": cannot read: " + message);
  }
  if (got == 0) eof_ = true;
  end_ += static_cast<std::size_t>(got);
  return Status();
}

Status InputFile::want(std::size_t n) {
  while (available() < n && !eof_) {
    SLUICE_RETURN_IF_ERROR(fill());
  }
  return Status();
}

StatusOr<bool> InputFile::next_line(std::string_view& line) {
  std::size_t searched = 0;  // bytes already known to hold no '\n'
  for (;;) {
    const char* start = buffer_.data() + begin_;
    if (const void* newline = std::memchr(start + searched, '\n', available() - searched)) {
      const auto length = static_cast<std::size_t>(static_cast<const char*>(newline) - start);
      line = std::string_view(start, length);
      consume(length + 1);
      return true;
    }
    searched = available();
    if (searched > kMaxLine) {
      return invalid_argument(path_ + ": a line is longer than " + std::to_string(kMaxLine >> 20) +
                              " MiB");
    }
    if (eof_) {
      if (searched == 0) return false;
      line = std::string_view(start, searched);
      consume(searched);
      return true;
    }
    SLUICE_RETURN_IF_ERROR(fill());
  }
}

}  // namespace sluice::simulate
