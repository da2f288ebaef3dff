#include "sluice/bench/key_distribution.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace sluice::bench {
namespace {

__extension__ using Uint128 = unsigned __int128;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// log1p(x)/x and expm1(x)/x, continuous at 0 (rejection-inversion helpers).
double log1p_over_x(double x) {
  return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double expm1_over_x(double x) {
  return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1 + x * 0.5 * (1 + x / 3.0 * (1 + 0.25 * x));
}

}  // namespace

Random::Random(std::uint64_t seed) {
  for (std::uint64_t& word : s_) word = splitmix64(seed);
}

std::uint64_t Random::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

std::uint64_t Random::below(std::uint64_t bound) {
  Uint128 product = static_cast<Uint128>(next()) * bound;
  auto low = static_cast<std::uint64_t>(product);
  if (low < bound) {
    const std::uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      product = static_cast<Uint128>(next()) * bound;
      low = static_cast<std::uint64_t>(product);
    }
  }
  return static_cast<std::uint64_t>(product >> 64);
}

double Random::unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t state = seed ^ (index * 0xd1b54a32d192ed03ULL);
  splitmix64(state);
  return splitmix64(state);
}

StatusOr<DistributionSpec> parse_distribution(std::string_view text) {
  if (text == "hot") return DistributionSpec{.kind = DistributionKind::kHot};
  if (text == "uniform") return DistributionSpec{.kind = DistributionKind::kUniform};
  if (text == "zipf") return DistributionSpec{.kind = DistributionKind::kZipf};
  constexpr std::string_view kZipfPrefix = "zipf:";
  if (text.starts_with(kZipfPrefix)) {
    const std::string_view number = text.substr(kZipfPrefix.size());
    double s = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), s);
    if (error != std::errc() || end != number.data() + number.size() || number.empty()) {
      return invalid_argument("distribution: zipf exponent must be a number, as in zipf:0.99");
    }
    if (!(s > 0 && s <= kMaxZipfExponent)) {
      return invalid_argument(
          "distribution: zipf exponent must be in (0, 100]; 0 would be uniform");
    }
    return DistributionSpec{.kind = DistributionKind::kZipf, .zipf_exponent = s};
  }
  return invalid_argument("distribution: must be hot, uniform, zipf or zipf:S (got \"" +
                          std::string(text) + "\")");
}

std::string format_distribution(const DistributionSpec& spec) {
  switch (spec.kind) {
    case DistributionKind::kHot:
      return "hot";
    case DistributionKind::kUniform:
      return "uniform";
    case DistributionKind::kZipf: {
      char buffer[32];
      std::snprintf(buffer, sizeof buffer, "zipf:%g", spec.zipf_exponent);
      return buffer;
    }
  }
  return "?";
}

KeySampler::KeySampler(const DistributionSpec& spec, std::uint64_t keys, std::uint64_t seed)
    : spec_(spec), keys_(keys == 0 ? 1 : keys), random_(seed) {
  if (spec_.kind == DistributionKind::kZipf) {
    h_integral_x1_ = h_integral(1.5) - 1;
    h_integral_n_ = h_integral(static_cast<double>(keys_) + 0.5);
    s_ = 2 - h_integral_inverse(h_integral(2.5) - h(2));
  }
}

// H(x) = ∫ h: (x^(1-s) - 1) / (1 - s), and log(x) when s = 1, without a branch.
double KeySampler::h_integral(double x) const {
  const double log_x = std::log(x);
  return expm1_over_x((1 - spec_.zipf_exponent) * log_x) * log_x;
}

double KeySampler::h(double x) const { return std::exp(-spec_.zipf_exponent * std::log(x)); }

double KeySampler::h_integral_inverse(double x) const {
  double t = x * (1 - spec_.zipf_exponent);
  if (t < -1) t = -1;  // rounding; the true value is >= -1
  return std::exp(log1p_over_x(t) * x);
}

std::uint64_t KeySampler::next() {
  switch (spec_.kind) {
    case DistributionKind::kHot:
      return 0;
    case DistributionKind::kUniform:
      return random_.below(keys_);
    case DistributionKind::kZipf:
      break;
  }
  // Rejection-inversion: invert the integral of the hat function h between 1/2 and N + 1/2 and
  // accept the rounded point with the exact probability ratio; the acceptance rate is high for
  // every s, so the loop runs about once.
  const auto n = static_cast<double>(keys_);
  for (;;) {
    const double u = h_integral_n_ + random_.unit() * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double k = std::floor(x + 0.5);
    if (k < 1) k = 1;
    if (k > n) k = n;
    if (k - x <= s_ || u >= h_integral(k + 0.5) - h(k)) return static_cast<std::uint64_t>(k) - 1;
  }
}

double KeySampler::probability(const DistributionSpec& spec, std::uint64_t keys,
                               std::uint64_t index) {
  if (keys == 0 || index >= keys) return 0;
  switch (spec.kind) {
    case DistributionKind::kHot:
      return index == 0 ? 1.0 : 0.0;
    case DistributionKind::kUniform:
      return 1.0 / static_cast<double>(keys);
    case DistributionKind::kZipf:
      break;
  }
  double total = 0;
  for (std::uint64_t k = keys; k >= 1; --k) {
    total += std::pow(static_cast<double>(k), -spec.zipf_exponent);
  }
  return std::pow(static_cast<double>(index + 1), -spec.zipf_exponent) / total;
}

}  // namespace sluice::bench
