#include "sluice/bench/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sluice::bench {

std::size_t Histogram::bucket_of(std::uint64_t value) {
  if (value < 2 * kSubBuckets) return static_cast<std::size_t>(value);
  // value has its top bit at `msb` >= kSubBucketBits + 1; keep the top kSubBucketBits + 1 bits.
  const int msb = 63 - std::countl_zero(value);
  const int shift = msb - kSubBucketBits;
  return static_cast<std::size_t>(static_cast<std::uint64_t>(shift) * kSubBuckets +
                                  (value >> shift));
}

std::uint64_t Histogram::bucket_lowest(std::size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  const std::uint64_t shift = bucket / kSubBuckets - 1;
  const std::uint64_t mantissa = bucket - shift * kSubBuckets;  // in [kSubBuckets, 2 kSubBuckets)
  return mantissa << shift;
}

std::uint64_t Histogram::bucket_highest(std::size_t bucket) {
  if (bucket < 2 * kSubBuckets) return bucket;
  const std::uint64_t shift = bucket / kSubBuckets - 1;
  return bucket_lowest(bucket) + ((std::uint64_t{1} << shift) - 1);
}

void Histogram::record(std::uint64_t value, std::uint64_t times) {
  if (times == 0) return;
  counts_[bucket_of(value)] += times;
  count_ += times;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
  sum_ += static_cast<long double>(value) * static_cast<long double>(times);
}

void Histogram::merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  sum_ += other.sum_;
}

void Histogram::clear() { *this = Histogram(); }

double Histogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / static_cast<long double>(count_));
}

std::uint64_t Histogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0.0) return min_;
  const auto wanted = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= wanted) return std::clamp(bucket_highest(i), min_, max_);
  }
  return max_;
}

}  // namespace sluice::bench
