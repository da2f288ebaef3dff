// connection_budget: how the process's descriptor limit is shared between the ports that accept
// connections, so that no port (and no flood on it) can take the descriptors the other port, the
// store and the policy database need (issue 32, H1).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

// The default connection caps for a descriptor limit of `descriptor_limit` (RLIMIT_NOFILE's soft
// limit; 0 or anything above 10^6 counts as 10^6, an unlimited limit included).
struct ConnectionBudget {
  std::size_t http = 0;  // HTTP connections at most (at least 16)
  std::size_t grpc = 0;  // gRPC connections at most (16 to 1024); 0 when gRPC does not listen
};

// Descriptors kept back for Redis, SQL, log files and the listeners themselves.
inline constexpr std::uint64_t kReservedDescriptors = 128;

// 128 descriptors are kept back; of the rest, gRPC (when `with_grpc`) gets a quarter, clamped to
// 16…1024 (Envoy needs few connections), and HTTP what remains, at least 16. Pure.
ConnectionBudget connection_budget(std::uint64_t descriptor_limit, bool with_grpc);

// The soft RLIMIT_NOFILE of this process (1024 when it cannot be read).
std::uint64_t descriptor_limit();

}  // namespace sluice
