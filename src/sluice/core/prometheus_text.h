// PrometheusText: appends metrics to a string in the Prometheus text exposition format (version
// 0.0.4) — each family's `# HELP` and `# TYPE` lines, then its samples, label values escaped. The
// one writer of that format: the decision, defence, lease, HTTP and store metrics all go through
// it, so the escaping and the line shapes are decided once.
//
//   PrometheusText text(out);
//   text.family("sluice_decisions_total", MetricType::kCounter, "Decisions by policy and
//   outcome."); text.sample("sluice_decisions_total", {{"policy", name}, {"outcome", "allowed"}},
//   count);
//
// Not thread-safe (it appends to one string); callers hold what they read consistent.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace sluice {

enum class MetricType { kCounter, kGauge, kHistogram };

// One label of a sample; `value` is escaped when written, `name` must be a valid label name.
struct MetricLabel {
  std::string_view name;
  std::string_view value;
};

class PrometheusText {
 public:
  explicit PrometheusText(std::string& out) : out_(out) {}

  // "# HELP name help" and "# TYPE name type". `help` must hold no newline or backslash.
  void family(std::string_view name, MetricType type, std::string_view help);

  // "name value".
  void sample(std::string_view name, std::uint64_t value) {
    sample(name, std::span<const MetricLabel>(), value);
  }
  // "name{a="x",b="y"} value" ("name value" without labels).
  void sample(std::string_view name, std::span<const MetricLabel> labels, std::uint64_t value);
  void sample(std::string_view name, std::initializer_list<MetricLabel> labels,
              std::uint64_t value) {
    sample(name, std::span<const MetricLabel>(labels.begin(), labels.size()), value);
  }
  // The value as given: a number already formatted ("0.000250", "+Inf").
  void sample(std::string_view name, std::span<const MetricLabel> labels, std::string_view value);

  // A family with one unlabelled sample (most gauges and process-wide counters).
  void single(std::string_view name, MetricType type, std::string_view help, std::uint64_t value);

 private:
  void start_sample(std::string_view name, std::span<const MetricLabel> labels);

  std::string& out_;
};

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string escape_label_value(std::string_view value);

// Microseconds as seconds with six decimals ("0.000250"): the unit Prometheus names in `_seconds`.
std::string format_seconds(std::int64_t micros);

}  // namespace sluice
