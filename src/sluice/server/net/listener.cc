#include "sluice/server/net/listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sluice::server {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

StatusOr<tcp::acceptor> open_listener(asio::io_context& io, const std::string& host,
                                      std::uint16_t port, std::string_view setting) {
  const std::string where = std::string(setting) + " " + host + ":" + std::to_string(port);
  error_code ec;
  tcp::endpoint endpoint;
  const asio::ip::address address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    tcp::resolver resolver(io);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      return unavailable(where + ": cannot resolve host: " + ec.message());
    }
    endpoint = results.begin()->endpoint();
  }
  tcp::acceptor acceptor(io);
  const auto failed = [&](std::string_view step) {
    return unavailable(where + ": " + std::string(step) + ": " + ec.message());
  };
  if (acceptor.open(endpoint.protocol(), ec); ec) return failed("open");
  if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec); ec) return failed("option");
  if (acceptor.bind(endpoint, ec); ec) return failed("bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) return failed("listen");
  return acceptor;
}

void DescriptorReserve::open() {
  if (fd_ < 0) fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void DescriptorReserve::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void DescriptorReserve::shed_one_waiting(tcp::acceptor& acceptor) {
  pollfd waiting{acceptor.native_handle(), POLLIN, 0};
  // The reserve is lost when another thread took the descriptor it freed last time; it is taken
  // again as soon as one is free.
  open();
  if (fd_ < 0 || ::poll(&waiting, 1, 0) != 1) return;
  close();
  const int fd = ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) ::close(fd);
  open();
}

}  // namespace sluice::server
