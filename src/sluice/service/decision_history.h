// DecisionHistory: per-second decision counts per policy over the last minutes (the web
// console's live charts), kept in memory by sampling DecisionMetrics' cumulative counters once a
// second — no work on the decision path. Each point holds what happened between the previous
// sample and its own. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/service/decision_metrics.h"
#include "sluice/time.h"

namespace sluice::service {

class DecisionHistory {
 public:
  // Keeps the last `points` samples (900: 15 minutes at one a second). `metrics` must outlive
  // this object.
  explicit DecisionHistory(const DecisionMetrics& metrics, std::size_t points = 900);

  // Reads the counters at `now` (µs) and appends one point per policy: the counts since the
  // previous sample (the first sample only sets the baseline and appends nothing). Meant to be
  // called about once a second; a `now` not after the previous sample is ignored.
  void sample(Micros now);

  struct Point {
    Micros at = 0;  // when the sample was taken; the counts are for (previous at, at]
    std::uint64_t allowed = 0;
    std::uint64_t denied = 0;
    std::uint64_t shadow_denied = 0;
    std::uint64_t degraded = 0;
  };
  // The points of `policy`, oldest first; zeros for samples before its first decision; empty
  // before the second sample.
  std::vector<Point> points(std::string_view policy) const;

 private:
  struct Delta {
    std::uint32_t allowed = 0;
    std::uint32_t denied = 0;
    std::uint32_t shadow_denied = 0;
    std::uint32_t degraded = 0;
  };

  const DecisionMetrics& metrics_;
  const std::size_t capacity_;
  mutable Mutex mutex_;
  bool started_ SLUICE_GUARDED_BY(mutex_) = false;
  Micros last_at_ SLUICE_GUARDED_BY(mutex_) = 0;
  std::map<std::string, DecisionMetrics::Counts, std::less<>> last_ SLUICE_GUARDED_BY(mutex_);
  std::deque<Micros> times_ SLUICE_GUARDED_BY(mutex_);  // one per point, oldest first
  std::map<std::string, std::deque<Delta>, std::less<>> series_
      SLUICE_GUARDED_BY(mutex_);  // each as long as times_
};

}  // namespace sluice::service
