#include "sluice/policy/describe.h"

#include <type_traits>
#include <variant>

#include "sluice/core/duration.h"

namespace sluice::policy {
namespace {

using algorithm::RefillMode;

std::string words(const algorithm::TokenBucket& p) {
  std::string text = std::to_string(p.capacity) + " at once, refilled " + std::to_string(p.refill);
  text += p.refill_mode == RefillMode::kInterval
              ? " every " + format_duration(p.period) + " all at once (interval)"
              : " per " + format_duration(p.period) + " (smooth)";
  // A bucket starts full unless `initial` says otherwise.
  if (p.initial && *p.initial < p.capacity) {
    text += ", new subjects start with " + std::to_string(*p.initial);
  }
  return text;
}

std::string words(const algorithm::Gcra& p) {
  // Admits like a smooth bucket of burst + 1.
  return std::to_string(p.rate) + " per " + format_duration(p.period) + ", up to " +
         std::to_string(p.burst + 1) + " at once (burst " + std::to_string(p.burst) + ")";
}

std::string words(const algorithm::LeakyBucket& p) {
  return std::to_string(p.rate) + " per " + format_duration(p.period) + " paced evenly, " +
         (p.max_delay > 0 ? "waiting up to " + format_duration(p.max_delay) : "no waiting");
}

std::string words(const algorithm::FixedWindow& p) {
  if (p.calendar) {
    return std::to_string(p.limit) + " per calendar " +
           std::string(algorithm::calendar_period_name(p.calendar->period)) + " in " +
           std::string(p.calendar->time_zone);
  }
  return std::to_string(p.limit) + " per " + format_duration(p.window);
}

std::string words(const algorithm::SlidingWindow& p) {
  return std::to_string(p.limit) + " in any " + format_duration(p.window) + " (estimated)";
}

std::string words(const algorithm::SlidingLog& p) {
  return std::to_string(p.limit) + " in any " + format_duration(p.window) + " (exact)";
}

std::string words(const algorithm::Concurrency& p) {
  return std::to_string(p.limit) + " at once, lease " + format_duration(p.lease_ttl);
}

}  // namespace

std::string describe_limit(const algorithm::Limit& limit) {
  return std::string(algorithm::algorithm_name(limit)) + ": " +
         std::visit([](const auto& p) { return words(p); }, limit);
}

std::string describe_limits(const std::vector<algorithm::Limit>& limits) {
  std::string text;
  for (const algorithm::Limit& limit : limits) {
    if (!text.empty()) text += "; ";
    text += describe_limit(limit);
  }
  return text;
}

}  // namespace sluice::policy
