#include "sluice/bench/report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>

namespace sluice::bench {
namespace {

double micros(std::uint64_t nanoseconds) { return static_cast<double>(nanoseconds) / 1e3; }

struct Column {
  std::string_view title;
  int width;
};

void append_cell(std::string& line, std::string_view text, int width) {
  if (!line.empty()) line += "  ";
  for (int pad = width - static_cast<int>(text.size()); pad > 0; --pad) line += ' ';
  line += text;
}

std::string integer(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.0f", value);
  return buffer;
}

std::string one_decimal(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

}  // namespace

nlohmann::json latency_to_json(const Histogram& h) {
  return {{"min", micros(h.min())},
          {"mean", h.mean() / 1e3},
          {"p50", micros(h.percentile(0.50))},
          {"p90", micros(h.percentile(0.90))},
          {"p99", micros(h.percentile(0.99))},
          {"p99_9", micros(h.percentile(0.999))},
          {"max", micros(h.max())}};
}

nlohmann::json result_to_json(const LoadResult& r, LoadMode mode) {
  nlohmann::json point = {{"threads", r.threads},
                          {"seconds", r.seconds},
                          {"decisions", r.decisions},
                          {"decisions_per_second", r.decisions_per_second()},
                          {"allowed", r.allowed},
                          {"denied", r.denied},
                          {"errors", r.errors},
                          {"degraded", r.degraded},
                          {"latency_us", latency_to_json(r.latency)}};
  if (r.decisions_per_call) point["decisions_per_call"] = *r.decisions_per_call;
  if (mode == LoadMode::kOpen) {
    point["intended_per_second"] = r.intended_per_second;
    point["unsent"] = r.unsent;
    point["service_time_us"] = latency_to_json(r.service_time);
  }
  return point;
}

std::string format_latency(std::uint64_t ns) {
  char buffer[32];
  const auto value = static_cast<double>(ns);
  if (ns < 1'000) {
    std::snprintf(buffer, sizeof buffer, "%lluns", static_cast<unsigned long long>(ns));
  } else if (ns < 1'000'000) {
    std::snprintf(buffer, sizeof buffer,
                  value < 1e4   ? "%.2fus"
                  : value < 1e5 ? "%.1fus"
                                : "%.0fus",
                  value / 1e3);
  } else if (ns < 1'000'000'000) {
    std::snprintf(buffer, sizeof buffer,
                  value < 1e7   ? "%.2fms"
                  : value < 1e8 ? "%.1fms"
                                : "%.0fms",
                  value / 1e6);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.2fs", value / 1e9);
  }
  return buffer;
}

std::string format_table(const std::vector<LoadResult>& results, LoadMode mode) {
  // Async callers are requests in flight, not threads: the column says which it counts.
  std::vector<Column> columns = {{mode == LoadMode::kAsync ? "in flight" : "threads", 9},
                                 {"decisions/s", 11},
                                 {"allowed", 10},
                                 {"denied", 10},
                                 {"errors", 6}};
  if (mode == LoadMode::kOpen) {
    columns.push_back({"intended/s", 10});
    columns.push_back({"unsent", 8});
  }
  for (std::string_view title : {"p50", "p90", "p99", "p99.9", "max"}) {
    columns.push_back({title, 8});
  }
  const bool per_call = std::any_of(results.begin(), results.end(), [](const LoadResult& r) {
    return r.decisions_per_call.has_value();
  });
  if (per_call) columns.push_back({"per call", 8});
  std::string out;
  std::string line;
  for (const Column& column : columns) append_cell(line, column.title, column.width);
  out += line + "\n";
  for (const LoadResult& r : results) {
    line.clear();
    std::size_t c = 0;
    const auto cell = [&](const std::string& text) { append_cell(line, text, columns[c++].width); };
    cell(std::to_string(r.threads));
    cell(integer(r.decisions_per_second()));
    cell(std::to_string(r.allowed));
    cell(std::to_string(r.denied));
    cell(std::to_string(r.errors));
    if (mode == LoadMode::kOpen) {
      cell(integer(r.intended_per_second));
      cell(std::to_string(r.unsent));
    }
    for (double q : {0.50, 0.90, 0.99, 0.999}) cell(format_latency(r.latency.percentile(q)));
    cell(format_latency(r.latency.max()));
    if (per_call) cell(r.decisions_per_call ? one_decimal(*r.decisions_per_call) : "-");
    out += line + "\n";
  }
  return out;
}

}  // namespace sluice::bench
