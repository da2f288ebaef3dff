#include "testing/measure.h"

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>

namespace sluice::test {

double cpu_us(int who) {
  rusage usage{};
  ::getrusage(who, &usage);
  const auto us = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec);
  };
  return us(usage.ru_utime) + us(usage.ru_stime);
}

double sorted_percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  return sorted[static_cast<std::size_t>(q * static_cast<double>(sorted.size() - 1))];
}

double main_thread_instructions(std::string_view callgrind_control_output) {
  std::istringstream lines{std::string(callgrind_control_output)};
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string th, thread, count;
    if (!(words >> th >> thread >> count) || th != "Th" || thread != "1") continue;
    count.erase(std::remove(count.begin(), count.end(), ','), count.end());
    return std::stod(count);
  }
  return 0;
}

}  // namespace sluice::test
