#include "sluice/bench/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sluice::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

LoadResult sample_result() {
  LoadResult r;
  r.threads = 10;
  r.seconds = 2.0;
  r.allowed = 1'500;
  r.denied = 500;
  r.decisions = 2'000;
  for (int i = 1; i <= 2'000; ++i) r.latency.record(static_cast<std::uint64_t>(i) * 100);
  r.service_time = r.latency;
  return r;
}

TEST(ReportTest, FormatsLatenciesWithThreeSignificantDigits) {
  EXPECT_EQ(format_latency(850), "850ns");
  EXPECT_EQ(format_latency(1'234), "1.23us");
  EXPECT_EQ(format_latency(78'140), "78.1us");
  EXPECT_EQ(format_latency(456'700), "457us");
  EXPECT_EQ(format_latency(1'230'000), "1.23ms");
  EXPECT_EQ(format_latency(2'500'000'000), "2.50s");
}

TEST(ReportTest, JsonHasThroughputCountsAndPercentilesInMicroseconds) {
  const nlohmann::json j = result_to_json(sample_result(), LoadMode::kClosed);
  EXPECT_EQ(j["threads"], 10);
  EXPECT_EQ(j["decisions"], 2'000);
  EXPECT_DOUBLE_EQ(j["decisions_per_second"].get<double>(), 1'000.0);
  EXPECT_EQ(j["allowed"], 1'500);
  EXPECT_EQ(j["denied"], 500);
  EXPECT_NEAR(j["latency_us"]["p50"].get<double>(), 100.0, 1.0);
  EXPECT_NEAR(j["latency_us"]["p99"].get<double>(), 198.0, 2.0);
  EXPECT_DOUBLE_EQ(j["latency_us"]["max"].get<double>(), 200.0);
  EXPECT_TRUE(j["latency_us"].contains("p99_9"));
  EXPECT_FALSE(j.contains("service_time_us"));
  EXPECT_FALSE(j.contains("decisions_per_call"));
  const nlohmann::json open = result_to_json(sample_result(), LoadMode::kOpen);
  EXPECT_TRUE(open.contains("service_time_us"));
  EXPECT_TRUE(open.contains("unsent"));
  LoadResult batched = sample_result();
  batched.decisions_per_call = 4.96;
  EXPECT_DOUBLE_EQ(result_to_json(batched, LoadMode::kClosed)["decisions_per_call"].get<double>(),
                   4.96);
}

TEST(ReportTest, TableHasAHeaderAndOneRowPerPoint) {
  const std::string table = format_table({sample_result(), sample_result()}, LoadMode::kClosed);
  EXPECT_THAT(table, HasSubstr("decisions/s"));
  EXPECT_THAT(table, HasSubstr("p99.9"));
  EXPECT_THAT(table, HasSubstr("1000"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3);
  EXPECT_THAT(format_table({sample_result()}, LoadMode::kOpen), HasSubstr("intended/s"));
  EXPECT_THAT(table, Not(HasSubstr("per call")));
  LoadResult batched = sample_result();
  batched.decisions_per_call = 4.96;
  const std::string with_calls = format_table({batched}, LoadMode::kClosed);
  EXPECT_THAT(with_calls, HasSubstr("per call"));
  EXPECT_THAT(with_calls, HasSubstr("  5.0\n"));
}

TEST(ReportTest, AsyncTableCountsCallersInFlightNotThreads) {
  const std::string async = format_table({sample_result()}, LoadMode::kAsync);
  EXPECT_EQ(async.rfind("in flight", 0), 0u) << async;
  EXPECT_THAT(async, Not(HasSubstr("threads")));
  const std::string closed = format_table({sample_result()}, LoadMode::kClosed);
  EXPECT_EQ(closed.rfind("  threads", 0), 0u) << closed;
}

}  // namespace
}  // namespace sluice::bench
