#include "sluice/core/connection_budget.h"

#include <sys/resource.h>

#include <algorithm>

namespace sluice {
namespace {
constexpr std::uint64_t kLargestLimit = 1'000'000;
constexpr std::uint64_t kFewestConnections = 16;
constexpr std::uint64_t kMostGrpcConnections = 1024;
}  // namespace

ConnectionBudget connection_budget(std::uint64_t descriptor_limit, bool with_grpc) {
  const std::uint64_t limit =
      descriptor_limit == 0 ? kLargestLimit : std::min(descriptor_limit, kLargestLimit);
  const std::uint64_t usable = limit > kReservedDescriptors ? limit - kReservedDescriptors : 0;
  const std::uint64_t grpc =
      with_grpc ? std::clamp(usable / 4, kFewestConnections, kMostGrpcConnections) : 0;
  const std::uint64_t http = std::max(usable > grpc ? usable - grpc : 0, kFewestConnections);
  return {.http = static_cast<std::size_t>(http), .grpc = static_cast<std::size_t>(grpc)};
}

std::uint64_t descriptor_limit() {
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) return 1024;
  return files.rlim_cur == RLIM_INFINITY ? kLargestLimit : files.rlim_cur;
}

}  // namespace sluice
