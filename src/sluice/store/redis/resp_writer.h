// RESP encoding of commands, appended in place: `*<n>\r\n`, then `$<len>\r\n<bytes>\r\n` per
// argument. Arguments are arbitrary bytes. A thread's scratch buffer is reused across calls, so
// formatting a command allocates nothing once warm (resp.h's format_command allocates a string per
// command; it serves the handshake and tests).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace sluice::redis {

void append_array_header(std::string& out, std::size_t count);
void append_bulk(std::string& out, std::string_view bytes);
// The decimal form of `value` as a bulk string (EVAL's numkeys).
void append_bulk_decimal(std::string& out, std::size_t value);
void append_command(std::string& out, std::span<const std::string> args);

// This thread's scratch buffer, emptied. Valid until the thread's next call.
std::string& scratch_buffer();

}  // namespace sluice::redis
