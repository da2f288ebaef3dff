#include "sluice/core/prometheus_text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

TEST(PrometheusTextTest, FamilyWritesHelpThenTypeLines) {
  std::string out;
  PrometheusText text(out);
  text.family("sluice_a_total", MetricType::kCounter, "What a counts.");
  text.family("sluice_b", MetricType::kGauge, "B now.");
  text.family("sluice_c_seconds", MetricType::kHistogram, "How long c took.");
  EXPECT_EQ(out,
            "# HELP sluice_a_total What a counts.\n# TYPE sluice_a_total counter\n"
            "# HELP sluice_b B now.\n# TYPE sluice_b gauge\n"
            "# HELP sluice_c_seconds How long c took.\n# TYPE sluice_c_seconds histogram\n");
}

TEST(PrometheusTextTest, SamplesWithAndWithoutLabels) {
  std::string out;
  PrometheusText text(out);
  text.sample("plain", 0);
  text.sample("one", {{"policy", "p"}}, 18446744073709551615u);
  text.sample("two", {{"policy", "p"}, {"outcome", "allowed"}}, 7);
  const std::vector<MetricLabel> labels = {{"le", "+Inf"}};
  text.sample("bucket", labels, 3);
  text.sample("sum", {}, "0.000250");
  EXPECT_EQ(out,
            "plain 0\n"
            "one{policy=\"p\"} 18446744073709551615\n"
            "two{policy=\"p\",outcome=\"allowed\"} 7\n"
            "bucket{le=\"+Inf\"} 3\n"
            "sum 0.000250\n");
}

TEST(PrometheusTextTest, LabelValuesAreEscaped) {
  std::string out;
  PrometheusText(out).sample("m", {{"policy", "a\\b\"c\nd"}}, 1);
  EXPECT_EQ(out, "m{policy=\"a\\\\b\\\"c\\nd\"} 1\n");
  EXPECT_EQ(escape_label_value("caf\xC3\xA9 {x}"), "caf\xC3\xA9 {x}");
}

TEST(PrometheusTextTest, SingleIsAFamilyWithOneSample) {
  std::string out;
  PrometheusText(out).single("sluice_live_nodes", MetricType::kGauge, "Live nodes.", 3);
  EXPECT_EQ(out,
            "# HELP sluice_live_nodes Live nodes.\n# TYPE sluice_live_nodes gauge\n"
            "sluice_live_nodes 3\n");
}

TEST(PrometheusTextTest, SecondsHaveSixDecimals) {
  EXPECT_EQ(format_seconds(0), "0.000000");
  EXPECT_EQ(format_seconds(250), "0.000250");
  EXPECT_EQ(format_seconds(1'000'000), "1.000000");
  EXPECT_EQ(format_seconds(1'234'567'891), "1234.567891");
}

}  // namespace
}  // namespace sluice
