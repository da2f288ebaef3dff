#include "sluice/algorithm/token_lease.h"

#include <string>
#include <variant>

namespace sluice::algorithm {

Status check_token_lease_limits(std::span<const Limit> limits) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    const bool leasable = std::holds_alternative<TokenBucket>(limits[i]) ||
                          std::holds_alternative<Gcra>(limits[i]) ||
                          std::holds_alternative<FixedWindow>(limits[i]) ||
                          std::holds_alternative<SlidingWindow>(limits[i]);
    if (!leasable) {
      return invalid_argument("limits[" + std::to_string(i) +
                              "]: " + std::string(algorithm_name(limits[i])) +
                              " cannot be leased (token leases serve token_bucket, gcra, "
                              "fixed_window and sliding_window)");
    }
  }
  return {};
}

}  // namespace sluice::algorithm
