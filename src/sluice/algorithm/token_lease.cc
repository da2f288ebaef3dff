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
    if (const auto* window = std::get_if<FixedWindow>(&limits[i]); window && window->calendar) {
      // Its period's bounds come with each call, computed for that instant (calendar.h); a take
      // and a give-back are separate calls that may straddle a boundary.
      return invalid_argument("limits[" + std::to_string(i) +
                              "]: a calendar fixed_window cannot be leased (token leases serve "
                              "windows of a fixed length)");
    }
    if (const auto* window = std::get_if<FixedWindow>(&limits[i]);
        window && window->denied_cost == DeniedCost::kCounted) {
      // A lease is taken before the requests it serves; a denied request has nothing to take
      // from, so a node could not count it where the shared window would.
      return invalid_argument("limits[" + std::to_string(i) +
                              "]: a fixed_window with denied_cost: counted cannot be leased");
    }
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
