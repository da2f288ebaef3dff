#include "sluice/service/split_budget.h"

namespace sluice::service {

double split_fraction(const std::function<std::size_t()>& live_nodes, double fallback) {
  if (!live_nodes) return fallback;
  const std::size_t live = live_nodes();
  if (live == 0) return fallback;
  return 1.0 / static_cast<double>(live);
}

}  // namespace sluice::service
