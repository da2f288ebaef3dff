#include "sluice/server/http/test_http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include "sluice/core/status_macros.h"

namespace sluice::test {

std::optional<std::string> RawResponse::header(std::string_view name) const {
  for (const http::Header& h : headers) {
    if (http::iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

StatusOr<RawConnection> RawConnection::open(std::uint16_t port, std::uint8_t source_host) {
  SLUICE_ASSIGN_OR_RETURN(RawConnection connection, unconnected(source_host));
  SLUICE_RETURN_IF_ERROR(connection.connect(port));
  return connection;
}

StatusOr<RawConnection> RawConnection::unconnected(std::uint8_t source_host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return internal_error(std::string("socket: ") + std::strerror(errno));
  RawConnection connection(fd);
  if (source_host != 1) {
    sockaddr_in source{};
    source.sin_family = AF_INET;
    source.sin_addr.s_addr = htonl((127u << 24) | source_host);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof source) != 0) {
      return unavailable(std::string("bind: ") + std::strerror(errno));
    }
  }
  return connection;
}

Status RawConnection::connect(std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return unavailable(std::string("connect: ") + std::strerror(errno));
  }
  return Status();
}

RawConnection::RawConnection(RawConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), buffer_(std::move(other.buffer_)) {}

RawConnection& RawConnection::operator=(RawConnection&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
  }
  return *this;
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

Status RawConnection::send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return unavailable(std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status();
}

namespace {

// Reads more into `buffer`: >0 bytes read, 0 peer closed, -1 error, -2 timeout.
int read_more(int fd, std::string& buffer, int timeout_ms) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  const int ready = ::poll(&p, 1, timeout_ms);
  if (ready == 0) return -2;
  if (ready < 0) return -1;
  char chunk[16384];
  const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
  if (n < 0) return -1;
  buffer.append(chunk, static_cast<std::size_t>(n));
  return static_cast<int>(n);
}

}  // namespace

StatusOr<RawResponse> RawConnection::read(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const auto remaining = [&] {
    return static_cast<int>(std::max<std::int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
               .count()));
  };
  std::size_t header_end = std::string::npos;
  while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    const int n = read_more(fd_, buffer_, remaining());
    if (n == -2) return deadline_exceeded("no complete response header");
    if (n <= 0) return unavailable("connection closed before a response header");
  }
  RawResponse response;
  const std::string head = buffer_.substr(0, header_end);
  std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) {
    return internal_error("bad status line: " + status_line);
  }
  response.status = std::stoi(status_line.substr(9, 3));
  std::size_t content_length = 0;
  while (line_end != std::string::npos) {
    const std::size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line =
        head.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    response.headers.push_back({line.substr(0, colon), value});
    if (http::iequals(line.substr(0, colon), "Content-Length")) {
      content_length = std::stoul(value);
    }
  }
  const std::size_t body_start = header_end + 4;
  while (buffer_.size() < body_start + content_length) {
    const int n = read_more(fd_, buffer_, remaining());
    if (n == -2) return deadline_exceeded("incomplete response body");
    if (n <= 0) return unavailable("connection closed inside a response body");
  }
  response.body = buffer_.substr(body_start, content_length);
  buffer_.erase(0, body_start + content_length);
  return response;
}

bool RawConnection::closed_by_peer(int timeout_ms) {
  std::string ignored;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    const int n = read_more(fd_, ignored, 50);
    if (n == 0 || n == -1) return true;
  }
  return false;
}

std::string format_request(std::string_view method, std::string_view target, std::string_view body,
                           const std::vector<http::Header>& headers) {
  std::string request = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\n";
  request += "Host: 127.0.0.1\r\n";
  for (const http::Header& h : headers) request += h.name + ": " + h.value + "\r\n";
  if (!body.empty() || method == "POST") {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  return request;
}

StatusOr<RawResponse> http_request(std::uint16_t port, std::string_view method,
                                   std::string_view target, std::string_view body,
                                   const std::vector<http::Header>& headers) {
  SLUICE_ASSIGN_OR_RETURN(RawConnection connection, RawConnection::open(port));
  SLUICE_RETURN_IF_ERROR(connection.send(format_request(method, target, body, headers)));
  return connection.read();
}

}  // namespace sluice::test
