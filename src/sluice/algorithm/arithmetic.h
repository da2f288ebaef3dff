// Integer helpers for the algorithms: division rounding toward -inf / +inf, and a 128-bit type
// for products that could pass int64 when a caller's clock jumps far from the stored state.
#pragma once

#include <cstdint>
#include <limits>

namespace sluice::algorithm {

__extension__ using Int128 = __int128;

// floor(a / b) for b > 0.
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// ceil(a / b) for b > 0.
constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && a > 0) ? q + 1 : q;
}

constexpr Int128 floor_div(Int128 a, Int128 b) {
  const Int128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// Narrows a 128-bit value into int64, saturating.
constexpr std::int64_t saturate(Int128 value) {
  constexpr auto kMax = std::numeric_limits<std::int64_t>::max();
  constexpr auto kMin = std::numeric_limits<std::int64_t>::min();
  if (value > kMax) return kMax;
  if (value < kMin) return kMin;
  return static_cast<std::int64_t>(value);
}

}  // namespace sluice::algorithm
