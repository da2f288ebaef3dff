#include "sluice/core/prometheus_text.h"

#include <cstdio>

namespace sluice {
namespace {

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string format_seconds(std::int64_t micros) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f", static_cast<double>(micros) / 1e6);
  return text;
}

void PrometheusText::family(std::string_view name, MetricType type, std::string_view help) {
  out_.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out_.append("# TYPE ").append(name).append(" ").append(type_name(type)).append("\n");
}

void PrometheusText::start_sample(std::string_view name, std::span<const MetricLabel> labels) {
  out_.append(name);
  if (!labels.empty()) {
    char separator = '{';
    for (const MetricLabel& label : labels) {
      out_.push_back(separator);
      out_.append(label.name).append("=\"").append(escape_label_value(label.value)).append("\"");
      separator = ',';
    }
    out_.push_back('}');
  }
  out_.push_back(' ');
}

void PrometheusText::sample(std::string_view name, std::span<const MetricLabel> labels,
                            std::uint64_t value) {
  start_sample(name, labels);
  out_.append(std::to_string(value)).append("\n");
}

void PrometheusText::sample(std::string_view name, std::span<const MetricLabel> labels,
                            std::string_view value) {
  start_sample(name, labels);
  out_.append(value).append("\n");
}

void PrometheusText::single(std::string_view name, MetricType type, std::string_view help,
                            std::uint64_t value) {
  family(name, type, help);
  sample(name, value);
}

}  // namespace sluice
