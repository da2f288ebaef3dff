// A deliberately dumb HTTP/1.1 client over plain POSIX sockets for tests: it sends exactly the
// bytes it is given (malformed ones included) and reads one response by Content-Length.
// Independent of Beast, so it can test the server built on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/server/http/message.h"
#include "sluice/status.h"

namespace sluice::test {

struct RawResponse {
  int status = 0;
  std::vector<http::Header> headers;
  std::string body;
  std::optional<std::string> header(std::string_view name) const;
};

class RawConnection {
 public:
  // Connects to 127.0.0.1:port from 127.0.0.<source_host> (Linux routes all of 127/8 locally),
  // so one test can be several client addresses.
  static StatusOr<RawConnection> open(std::uint16_t port, std::uint8_t source_host = 1);
  // A socket not yet connected: a test that must not take descriptors later (while the process
  // is out of them) makes its sockets first and connects them then.
  static StatusOr<RawConnection> unconnected(std::uint8_t source_host = 1);
  Status connect(std::uint16_t port);
  RawConnection(RawConnection&& other) noexcept;
  RawConnection& operator=(RawConnection&& other) noexcept;
  ~RawConnection();

  Status send(std::string_view bytes);
  // Reads one response (status line, headers, Content-Length body).
  StatusOr<RawResponse> read(int timeout_ms = 5'000);
  // True when the server closed the connection (read returns 0 / reset) within the timeout.
  bool closed_by_peer(int timeout_ms = 5'000);

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::string buffer_;
};

// "POST /v1/acquire HTTP/1.1" with Host, Content-Length and the given extra headers.
std::string format_request(std::string_view method, std::string_view target,
                           std::string_view body = {},
                           const std::vector<http::Header>& headers = {});

// One request on a new connection.
StatusOr<RawResponse> http_request(std::uint16_t port, std::string_view method,
                                   std::string_view target, std::string_view body = {},
                                   const std::vector<http::Header>& headers = {});

}  // namespace sluice::test
