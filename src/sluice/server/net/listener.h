// open_listener: the listening socket the HTTP and gRPC servers open the same way — the host
// resolved (a literal address or a name), SO_REUSEADDR, bound, listening.
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

}  // namespace sluice::server
