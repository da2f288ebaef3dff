// Histogram: a latency distribution in HdrHistogram's log-linear layout, for the load generator
// (`sluice bench`). Values (nanoseconds there) below 256 get a bucket each; above, every power of
// two is split into 128 equal buckets, so any reported percentile is at most 1/128 (0.8 %) above
// the exact one. Recording is O(1) with no allocation; histograms of different threads merge
// exactly (bucket counts add up), so each thread keeps its own and nothing is shared while
// measuring. Not thread-safe: one writer, merge after the writers are done.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace sluice::bench {

class Histogram {
 public:
  // 2^kSubBucketBits linear buckets per power of two: the relative resolution.
  static constexpr int kSubBucketBits = 7;
  static constexpr std::uint64_t kSubBuckets = std::uint64_t{1} << kSubBucketBits;
  // Enough buckets for every uint64 value.
  static constexpr std::size_t kBuckets = (64 - kSubBucketBits) * kSubBuckets + kSubBuckets;

  void record(std::uint64_t value) { record(value, 1); }
  // `value` recorded `times` times.
  void record(std::uint64_t value, std::uint64_t times);

  // Adds every value `other` recorded.
  void merge(const Histogram& other);

  void clear();

  std::uint64_t count() const { return count_; }
  // Exact extremes of what was recorded; 0 when empty.
  std::uint64_t min() const { return count_ == 0 ? 0 : min_; }
  std::uint64_t max() const { return max_; }
  // Exact arithmetic mean; 0 when empty.
  double mean() const;

  // The nearest-rank percentile: the smallest value v such that at least ceil(q * count) recorded
  // values are <= v, reported as the upper edge of v's bucket (clamped to max()), so the result is
  // never below the exact percentile and at most 1/128 above it. `q` in [0, 1] (clamped); q = 0
  // gives min(), q = 1 gives max(); 0 when empty.
  std::uint64_t percentile(double q) const;

  // Bucket layout, exposed for tests.
  static std::size_t bucket_of(std::uint64_t value);
  static std::uint64_t bucket_lowest(std::size_t bucket);
  static std::uint64_t bucket_highest(std::size_t bucket);

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  // Sum of values; long double keeps it exact well past 2^64 ns of total latency.
  long double sum_ = 0;
};

}  // namespace sluice::bench
