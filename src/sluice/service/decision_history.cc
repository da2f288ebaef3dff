#include "sluice/service/decision_history.h"

#include <algorithm>
#include <limits>

#include "sluice/core/mutex.h"

namespace sluice::service {
namespace {

std::uint32_t delta(std::uint64_t now, std::uint64_t before) {
  const std::uint64_t d = now >= before ? now - before : 0;
  return static_cast<std::uint32_t>(
      std::min<std::uint64_t>(d, std::numeric_limits<std::uint32_t>::max()));
}

}  // namespace

DecisionHistory::DecisionHistory(const DecisionMetrics& metrics, std::size_t points)
    : metrics_(metrics), capacity_(std::max<std::size_t>(points, 1)) {}

void DecisionHistory::sample(Micros now) {
  std::map<std::string, DecisionMetrics::Counts, std::less<>> counts = metrics_.counts();
  MutexLock lock(mutex_);
  if (started_ && now <= last_at_) return;
  if (!started_) {
    started_ = true;
    last_at_ = now;
    last_ = std::move(counts);
    return;
  }
  last_at_ = now;
  times_.push_back(now);
  for (const auto& [policy, c] : counts) {
    auto [it, inserted] = series_.try_emplace(policy);
    // A policy new since the last sample: zeros for the points before it.
    if (inserted) it->second.resize(times_.size() - 1);
    const DecisionMetrics::Counts before =
        last_.contains(policy) ? last_.find(policy)->second : DecisionMetrics::Counts{};
    it->second.push_back({.allowed = delta(c.allowed, before.allowed),
                          .denied = delta(c.denied, before.denied),
                          .shadow_denied = delta(c.shadow_denied, before.shadow_denied),
                          .degraded = delta(c.degraded, before.degraded)});
  }
  // Series of policies the metrics no longer report get a zero point, staying aligned.
  for (auto& [policy, points] : series_) {
    if (points.size() < times_.size()) points.resize(times_.size());
  }
  last_ = std::move(counts);
  if (times_.size() > capacity_) {
    times_.pop_front();
    for (auto& [policy, points] : series_) points.pop_front();
  }
}

std::vector<DecisionHistory::Point> DecisionHistory::points(std::string_view policy) const {
  MutexLock lock(mutex_);
  std::vector<Point> out;
  out.reserve(times_.size());
  const auto it = series_.find(policy);
  for (std::size_t i = 0; i < times_.size(); ++i) {
    Point point{.at = times_[i]};
    if (it != series_.end()) {
      const Delta& d = it->second[i];
      point.allowed = d.allowed;
      point.denied = d.denied;
      point.shadow_denied = d.shadow_denied;
      point.degraded = d.degraded;
    }
    out.push_back(point);
  }
  return out;
}

}  // namespace sluice::service
