#include "sluice/store/redis/resp_writer.h"

#include <charconv>
#include <iterator>

namespace sluice::redis {

namespace {

void append_decimal(std::string& out, std::size_t value) {
  char digits[24];
  const std::to_chars_result written = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, written.ptr);
}

}  // namespace

void append_array_header(std::string& out, std::size_t count) {
  out.push_back('*');
  append_decimal(out, count);
  out.append("\r\n");
}

void append_bulk(std::string& out, std::string_view bytes) {
  out.push_back('$');
  append_decimal(out, bytes.size());
  out.append("\r\n");
  out.append(bytes);
  out.append("\r\n");
}

void append_bulk_decimal(std::string& out, std::size_t value) {
  char digits[24];
  const std::to_chars_result written = std::to_chars(std::begin(digits), std::end(digits), value);
  append_bulk(out, std::string_view(digits, static_cast<std::size_t>(written.ptr - digits)));
}

void append_command(std::string& out, std::span<const std::string> args) {
  append_array_header(out, args.size());
  for (const std::string& arg : args) append_bulk(out, arg);
}

std::string& scratch_buffer() {
  thread_local std::string buffer;
  buffer.clear();
  return buffer;
}

}  // namespace sluice::redis
