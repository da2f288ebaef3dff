// gRPC's framing over HTTP/2, as pure functions with no I/O (the fuzz target's and the
// transport's shared parsing): the 5-byte length-prefixed messages of a call's DATA, the
// grpc-timeout header, and the percent-encoding of grpc-message. Specification: gRPC's
// "gRPC over HTTP2" protocol document.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::grpc_server {

// The bytes a message takes before its payload: a compressed flag and a big-endian length.
inline constexpr std::size_t kMessagePrefixBytes = 5;

// Collects a call's DATA bytes into whole messages. Holds at most one partial message: its
// prefix, then (when the prefix announces no more than the limit) its payload as it arrives.
class MessageReader {
 public:
  explicit MessageReader(std::size_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  // Appends `bytes`; each message completed is added to `out`. Errors (the call's end):
  // ResourceExhausted for a message announced over max_message_bytes (before its payload is
  // read), Unimplemented for a compressed message (no grpc-encoding is accepted), Internal for a
  // flag byte other than 0 or 1. After an error the reader takes nothing more.
  Status append(std::string_view bytes, std::vector<std::string>& out);

  // Bytes held for the message in progress (prefix included).
  std::size_t buffered() const { return partial_.size(); }
  // True between messages: nothing of a next message has arrived.
  bool at_boundary() const { return partial_.empty(); }

 private:
  std::size_t max_message_bytes_;
  std::string partial_;       // prefix, then payload, of the message in progress
  std::size_t expected_ = 0;  // payload bytes announced by partial_'s prefix
  bool failed_ = false;
};

// `payload` with its 5-byte prefix (uncompressed), appended to `out`.
void append_message(std::string_view payload, std::string& out);

// The grpc-timeout header ("1*8DIGIT unit", unit one of H M S m u n) as microseconds, rounded up
// to 1 µs for any positive time. InvalidArgument for anything else.
StatusOr<Micros> parse_grpc_timeout(std::string_view text);

// grpc-message's encoding: bytes outside 0x20..0x7E and '%' itself as %XX (upper-case hex).
std::string percent_encode(std::string_view text);

}  // namespace sluice::grpc_server
