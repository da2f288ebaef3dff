#include "sluice/server/grpc/grpc_framing.h"

#include <algorithm>

namespace sluice::grpc_server {

Status MessageReader::append(std::string_view bytes, std::vector<std::string>& out) {
  if (failed_) return internal_error("message framing: the call already failed");
  while (!bytes.empty()) {
    if (partial_.size() < kMessagePrefixBytes) {
      const std::size_t take = std::min(bytes.size(), kMessagePrefixBytes - partial_.size());
      partial_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (partial_.size() < kMessagePrefixBytes) break;
      const auto flag = static_cast<unsigned char>(partial_[0]);
      if (flag == 1) {
        failed_ = true;
        return Status(StatusCode::kUnimplemented,
                      "compressed messages are not accepted (send grpc-encoding identity)");
      }
      if (flag != 0) {
        failed_ = true;
        return internal_error("message framing: compressed flag " + std::to_string(flag) +
                              " is neither 0 nor 1");
      }
      expected_ = 0;
      for (std::size_t i = 1; i < kMessagePrefixBytes; ++i) {
        expected_ = expected_ << 8 | static_cast<unsigned char>(partial_[i]);
      }
      if (expected_ > max_message_bytes_) {
        failed_ = true;
        return Status(StatusCode::kResourceExhausted,
                      "message of " + std::to_string(expected_) + " bytes exceeds " +
                          std::to_string(max_message_bytes_) + " (max_message_bytes)");
      }
    }
    const std::size_t have = partial_.size() - kMessagePrefixBytes;
    const std::size_t take = std::min(bytes.size(), expected_ - have);
    partial_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (partial_.size() - kMessagePrefixBytes == expected_) {
      out.push_back(partial_.substr(kMessagePrefixBytes));
      partial_.clear();
      expected_ = 0;
    }
  }
  return Status();
}

void append_message(std::string_view payload, std::string& out) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  const char prefix[kMessagePrefixBytes] = {0, static_cast<char>(size >> 24),
                                            static_cast<char>(size >> 16),
                                            static_cast<char>(size >> 8), static_cast<char>(size)};
  out.append(prefix, kMessagePrefixBytes);
  out.append(payload);
}

StatusOr<Micros> parse_grpc_timeout(std::string_view text) {
  const auto bad = [&text] {
    return invalid_argument("grpc-timeout: \"" + std::string(text.substr(0, 32)) +
                            "\" is not 1 to 8 digits and a unit (H M S m u n)");
  };
  if (text.size() < 2 || text.size() > 9) return bad();
  std::int64_t value = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return bad();
    value = value * 10 + (c - '0');  // at most 99 999 999: no overflow
  }
  // Each unit's size in microseconds, or (for u and n) how many make one.
  switch (text.back()) {
    case 'H':
      return value * kMicrosPerHour;
    case 'M':
      return value * kMicrosPerMinute;
    case 'S':
      return value * kMicrosPerSecond;
    case 'm':
      return value * kMicrosPerMilli;
    case 'u':
      return value;
    case 'n':
      return (value + 999) / 1000;
    default:
      return bad();
  }
}

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7e || c == '%') {
      out.push_back('%');
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace sluice::grpc_server
