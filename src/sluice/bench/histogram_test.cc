#include "sluice/bench/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace sluice::bench {
namespace {

// Nearest-rank percentile of sorted samples: the definition Histogram::percentile approximates.
std::uint64_t exact_percentile(const std::vector<std::uint64_t>& sorted, double q) {
  if (q == 0) return sorted.front();
  const auto rank = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size()))));
  return sorted[rank - 1];
}

TEST(HistogramTest, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.percentile(0.5), 0u);
  EXPECT_EQ(h.percentile(1.0), 0u);
}

TEST(HistogramTest, BucketsTileEveryValueWithoutGapsOrOverlap) {
  for (std::size_t b = 0; b + 1 < Histogram::kBuckets; ++b) {
    SCOPED_TRACE(b);
    ASSERT_LE(Histogram::bucket_lowest(b), Histogram::bucket_highest(b));
    ASSERT_EQ(Histogram::bucket_highest(b) + 1, Histogram::bucket_lowest(b + 1));
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_lowest(b)), b);
    ASSERT_EQ(Histogram::bucket_of(Histogram::bucket_highest(b)), b);
  }
  EXPECT_EQ(Histogram::bucket_of(UINT64_MAX), Histogram::kBuckets - 1);
  EXPECT_EQ(Histogram::bucket_highest(Histogram::kBuckets - 1), UINT64_MAX);
}

TEST(HistogramTest, BucketWidthIsAtMostOne128thOfItsValues) {
  for (std::size_t b = 0; b < Histogram::kBuckets; ++b) {
    const std::uint64_t low = Histogram::bucket_lowest(b);
    const std::uint64_t width = Histogram::bucket_highest(b) - low;
    ASSERT_LE(static_cast<double>(width), static_cast<double>(low) / 128.0) << b;
  }
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v);
  EXPECT_EQ(h.percentile(0.50), 50u);
  EXPECT_EQ(h.percentile(0.90), 90u);
  EXPECT_EQ(h.percentile(0.99), 99u);
  EXPECT_EQ(h.percentile(0.999), 100u);
  EXPECT_EQ(h.percentile(0.0), 1u);
  EXPECT_EQ(h.percentile(1.0), 100u);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
}

TEST(HistogramTest, PercentilesAreWithinResolutionOfTheExactOnes) {
  // Log-normal latencies around 100 µs in nanoseconds with a long tail, as a loaded store shows.
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> latency(std::log(100'000.0), 0.8);
  std::vector<std::uint64_t> samples;
  Histogram h;
  for (int i = 0; i < 200'000; ++i) {
    const auto v = static_cast<std::uint64_t>(latency(random));
    samples.push_back(v);
    h.record(v);
  }
  std::sort(samples.begin(), samples.end());
  for (const double q : {0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0}) {
    SCOPED_TRACE(q);
    const std::uint64_t exact = exact_percentile(samples, q);
    const std::uint64_t reported = h.percentile(q);
    EXPECT_GE(reported, exact);
    EXPECT_LE(static_cast<double>(reported), static_cast<double>(exact) * (1.0 + 1.0 / 128));
  }
  EXPECT_EQ(h.min(), samples.front());
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_EQ(h.count(), samples.size());
}

TEST(HistogramTest, PercentileBoundaryFollowsTheNearestRank) {
  Histogram h;
  h.record(1'000, 99);
  h.record(1'000'000, 1);
  // Rank 99 of 100, reported as the upper edge of 1 000's bucket (1 000..1 003).
  EXPECT_EQ(h.percentile(0.99), Histogram::bucket_highest(Histogram::bucket_of(1'000)));
  EXPECT_EQ(h.percentile(0.99), 1'003u);
  EXPECT_EQ(h.percentile(0.991), 1'000'000u);  // rank 100
  EXPECT_EQ(h.percentile(0.999), 1'000'000u);
  EXPECT_EQ(h.max(), 1'000'000u);
}

TEST(HistogramTest, MergingPerThreadHistogramsEqualsRecordingEverythingInOne) {
  std::mt19937_64 random(11);
  std::uniform_int_distribution<std::uint64_t> value(0, 50'000'000);
  Histogram all;
  std::vector<Histogram> parts(4);
  for (int i = 0; i < 40'000; ++i) {
    const std::uint64_t v = value(random);
    all.record(v);
    parts[static_cast<std::size_t>(i % 4)].record(v);
  }
  Histogram merged;
  for (const Histogram& part : parts) merged.merge(part);
  merged.merge(Histogram());  // merging an empty one changes nothing
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.mean(), all.mean());
  for (const double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    EXPECT_EQ(merged.percentile(q), all.percentile(q)) << q;
  }
}

TEST(HistogramTest, HugeValuesAreKeptAndClearForgetsEverything) {
  Histogram h;
  h.record(UINT64_MAX);
  h.record(0);
  EXPECT_EQ(h.max(), UINT64_MAX);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.percentile(1.0), UINT64_MAX);
  EXPECT_EQ(h.percentile(0.5), 0u);
  h.clear();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.max(), 0u);
}

}  // namespace
}  // namespace sluice::bench
