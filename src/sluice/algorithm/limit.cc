#include "sluice/algorithm/limit.h"

#include <array>

namespace sluice::algorithm {

std::string_view algorithm_name(const Limit& limit) {
  // In the order of Limit's alternatives.
  static constexpr std::array<std::string_view, std::variant_size_v<Limit>> kNames = {
      "token_bucket",   "gcra",        "leaky_bucket", "fixed_window",
      "sliding_window", "sliding_log", "concurrency"};
  return kNames[limit.index()];
}

}  // namespace sluice::algorithm
