#include "sluice/service/scale.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace sluice::service {
namespace {

std::int64_t scale_count(std::int64_t count, double fraction) {
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::floor(static_cast<double>(count) * fraction)));
}

Micros stretch(Micros period, double fraction) {
  return static_cast<Micros>(std::ceil(static_cast<double>(period) / fraction));
}

}  // namespace

algorithm::Limit scale_limit(const algorithm::Limit& limit, double fraction) {
  if (fraction >= 1.0) return limit;
  return std::visit(
      [fraction](auto p) -> algorithm::Limit {
        using P = decltype(p);
        if constexpr (std::is_same_v<P, algorithm::TokenBucket>) {
          p.capacity = scale_count(p.capacity, fraction);
          p.period = stretch(p.period, fraction);
          if (p.initial)
            p.initial = std::min(
                p.capacity,
                static_cast<std::int64_t>(std::floor(static_cast<double>(*p.initial) * fraction)));
        } else if constexpr (std::is_same_v<P, algorithm::Gcra>) {
          p.burst = scale_count(p.burst + 1, fraction) - 1;
          p.period = stretch(p.period, fraction);
        } else if constexpr (std::is_same_v<P, algorithm::LeakyBucket>) {
          p.period = stretch(p.period, fraction);
        } else {
          p.limit = scale_count(p.limit, fraction);  // windows, sliding log, concurrency
        }
        return p;
      },
      limit);
}

}  // namespace sluice::service
