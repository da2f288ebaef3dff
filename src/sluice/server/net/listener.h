// open_listener: the listening socket the HTTP and gRPC servers open the same way — the host
// resolved (a literal address or a name), SO_REUSEADDR, bound, listening; and DescriptorReserve,
// what keeps such a socket answering when the process runs out of descriptors.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74 uses std::exchange without it (GCC 12)

#include "sluice/status.h"

namespace sluice::server {

// A socket listening on `host`:`port` (0: a free port; ask the acceptor's local_endpoint), run by
// `io`. Errors: Unavailable "<setting> HOST:PORT: <step>: <reason>", `setting` naming what the
// operator set (e.g. "listen", "grpc-listen").
StatusOr<boost::asio::ip::tcp::acceptor> open_listener(boost::asio::io_context& io,
                                                       const std::string& host, std::uint16_t port,
                                                       std::string_view setting);

// One descriptor held back for the moment the process has none left: given up to accept one
// waiting connection and close it at once, so that client learns now instead of waiting in the
// backlog, then taken again. Used on one thread at a time.
class DescriptorReserve {
 public:
  DescriptorReserve() = default;
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;
  ~DescriptorReserve() { close(); }

  void open();
  void close();
  // When a connection waits on `acceptor`: accepts and closes it with the reserved descriptor.
  void shed_one_waiting(boost::asio::ip::tcp::acceptor& acceptor);

 private:
  int fd_ = -1;
};

}  // namespace sluice::server
