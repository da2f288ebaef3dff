#include "sluice/bench/key_distribution.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace sluice::bench {
namespace {

using ::testing::HasSubstr;

// Draws `draws` keys and checks every key's frequency against its probability, within 5 standard
// deviations of a binomial count (a fixed seed makes this deterministic; 5σ leaves it robust to a
// change of seed too).
void expect_frequencies_match(const DistributionSpec& spec, std::uint64_t keys, int draws) {
  KeySampler sampler(spec, keys, 42);
  std::vector<int> counts(keys, 0);
  for (int i = 0; i < draws; ++i) {
    const std::uint64_t key = sampler.next();
    ASSERT_LT(key, keys);
    ++counts[key];
  }
  for (std::uint64_t k = 0; k < keys; ++k) {
    SCOPED_TRACE(k);
    const double p = KeySampler::probability(spec, keys, k);
    const double expected = p * draws;
    const double sigma = std::sqrt(draws * p * (1 - p));
    EXPECT_NEAR(counts[k], expected, 5 * sigma + 1);
  }
}

TEST(KeyDistributionTest, ParsesEveryForm) {
  EXPECT_EQ(parse_distribution("hot")->kind, DistributionKind::kHot);
  EXPECT_EQ(parse_distribution("uniform")->kind, DistributionKind::kUniform);
  EXPECT_EQ(parse_distribution("zipf")->kind, DistributionKind::kZipf);
  EXPECT_EQ(parse_distribution("zipf")->zipf_exponent, 1.0);
  EXPECT_EQ(parse_distribution("zipf:0.99")->zipf_exponent, 0.99);
  EXPECT_EQ(format_distribution(*parse_distribution("zipf:0.99")), "zipf:0.99");
  EXPECT_EQ(format_distribution(*parse_distribution("hot")), "hot");
}

TEST(KeyDistributionTest, RefusesBadExponentsAndNamesWithAMessage) {
  for (const char* bad :
       {"zipf:", "zipf:0", "zipf:-1", "zipf:abc", "zipf:1.5x", "zipf:101", "normal", ""}) {
    SCOPED_TRACE(bad);
    StatusOr<DistributionSpec> parsed = parse_distribution(bad);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("distribution"));
  }
}

TEST(KeyDistributionTest, HotAlwaysDrawsTheFirstKey) {
  KeySampler sampler({.kind = DistributionKind::kHot}, 1000, 1);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler.next(), 0u);
}

TEST(KeyDistributionTest, UniformFrequenciesMatch) {
  expect_frequencies_match({.kind = DistributionKind::kUniform}, 20, 200'000);
}

TEST(KeyDistributionTest, UniformCoversALargeKeySpace) {
  KeySampler sampler({.kind = DistributionKind::kUniform}, 1'000'000, 3);
  std::set<std::uint64_t> seen;
  std::uint64_t largest = 0;
  for (int i = 0; i < 10'000; ++i) {
    const std::uint64_t key = sampler.next();
    seen.insert(key);
    largest = std::max(largest, key);
  }
  EXPECT_GT(seen.size(), 9'900u);  // birthday collisions: ~50 expected
  EXPECT_GT(largest, 990'000u);
}

TEST(KeyDistributionTest, ZipfFrequenciesMatchForSeveralExponents) {
  for (const double s : {0.5, 0.99, 1.0, 1.2, 2.0}) {
    SCOPED_TRACE(s);
    expect_frequencies_match({.kind = DistributionKind::kZipf, .zipf_exponent = s}, 50, 300'000);
  }
}

TEST(KeyDistributionTest, ZipfIsSkewedTowardsTheFirstKeys) {
  const DistributionSpec spec{.kind = DistributionKind::kZipf, .zipf_exponent = 1.0};
  KeySampler sampler(spec, 1'000'000, 5);
  int in_first_100 = 0;
  constexpr int kDraws = 100'000;
  for (int i = 0; i < kDraws; ++i) in_first_100 += sampler.next() < 100 ? 1 : 0;
  // H(100)/H(10^6) = 5.187/14.393 = 36 %.
  EXPECT_NEAR(in_first_100 / static_cast<double>(kDraws), 0.360, 0.01);
}

TEST(KeyDistributionTest, SameSeedSameSequenceDifferentStreamsDiffer) {
  const DistributionSpec spec{.kind = DistributionKind::kZipf, .zipf_exponent = 0.99};
  KeySampler a(spec, 10'000, stream_seed(9, 0));
  KeySampler b(spec, 10'000, stream_seed(9, 0));
  KeySampler c(spec, 10'000, stream_seed(9, 1));
  int same_as_other_stream = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t x = a.next();
    ASSERT_EQ(x, b.next());
    same_as_other_stream += x == c.next() ? 1 : 0;
  }
  EXPECT_LT(same_as_other_stream, 200);
}

TEST(KeyDistributionTest, OneKeyIsAlwaysKeyZero) {
  for (const char* name : {"hot", "uniform", "zipf:0.5", "zipf:3"}) {
    KeySampler sampler(*parse_distribution(name), 1, 1);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(sampler.next(), 0u) << name;
  }
}

TEST(RandomTest, BelowIsUniformAndInRange) {
  Random random(1);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70'000; ++i) {
    const std::uint64_t v = random.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (const int count : counts) EXPECT_NEAR(count, 10'000, 500);
  for (int i = 0; i < 1000; ++i) {
    const double u = random.unit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace sluice::bench
