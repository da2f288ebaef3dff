// Key distributions for the load generator: which of N subjects each request names. One hot key
// (every request on subject 0: the abusive client, all contention on one key), uniform over N, or
// Zipf with exponent s over N (rank k drawn with probability proportional to 1/k^s: a few hot
// subjects and a long tail, as real traffic). Sampling is seeded and deterministic, O(1) time and
// memory per draw for every N (Zipf by rejection-inversion, Hörmann & Derflinger 1996), so a
// million keys cost no table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice::bench {

// xoshiro256** (Blackman & Vigna), seeded through splitmix64: fast, and the same sequence on every
// platform for a given seed (std:: distributions are implementation-defined). Not thread-safe.
class Random {
 public:
  explicit Random(std::uint64_t seed);
  std::uint64_t next();
  // Uniform in [0, bound), unbiased (Lemire's multiply-and-reject). bound > 0.
  std::uint64_t below(std::uint64_t bound);
  // Uniform in [0, 1) with 53 random bits.
  double unit();

 private:
  std::uint64_t s_[4];
};

// A well-mixed seed for stream `index` of a run seeded with `seed` (one stream per thread).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t index);

enum class DistributionKind { kHot, kUniform, kZipf };

struct DistributionSpec {
  DistributionKind kind = DistributionKind::kUniform;
  double zipf_exponent = 1.0;  // s > 0; only for kZipf
};

inline constexpr double kMaxZipfExponent = 100.0;

// "hot", "uniform", "zipf" (s = 1) or "zipf:S" with S a number in (0, 100].
// InvalidArgument naming the problem otherwise.
StatusOr<DistributionSpec> parse_distribution(std::string_view text);
// The inverse of parse_distribution: "hot", "uniform", "zipf:0.99".
std::string format_distribution(const DistributionSpec& spec);

// Draws key indices in [0, keys) from one distribution. Zipf rank 1 (the hottest) is index 0.
// Cheap to construct; one per thread (not thread-safe).
class KeySampler {
 public:
  // keys >= 1; for kZipf, 0 < zipf_exponent <= kMaxZipfExponent (checked by parse_distribution).
  KeySampler(const DistributionSpec& spec, std::uint64_t keys, std::uint64_t seed);

  std::uint64_t next();

  // The probability of index `index` under the distribution (exact up to rounding): for tests and
  // reports. O(keys) for Zipf (normalisation), O(1) otherwise.
  static double probability(const DistributionSpec& spec, std::uint64_t keys, std::uint64_t index);

 private:
  double h_integral(double x) const;
  double h(double x) const;
  double h_integral_inverse(double x) const;

  DistributionSpec spec_;
  std::uint64_t keys_;
  Random random_;
  // Rejection-inversion constants (Zipf only).
  double h_integral_x1_ = 0;
  double h_integral_n_ = 0;
  double s_ = 0;
};

}  // namespace sluice::bench
