// One response header as the codecs in wire/ produce it: a name and a value, free of any HTTP
// library, so the HTTP server, the gRPC server (RLS response_headers_to_add) and a client can
// each put it on their own message.
#pragma once

#include <string>

namespace sluice::wire {

struct Header {
  std::string name;
  std::string value;
  friend bool operator==(const Header&, const Header&) = default;
};

}  // namespace sluice::wire
