// Several traffic files as one time-ordered stream: each file is in time order (its reader
// checks), and the files are merged by time, ties going to the file named first. A replay that
// searches (recommend.h) streams the files once per pass, so nothing is held in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sluice/simulate/traffic.h"
#include "sluice/simulate/traffic_reader.h"
#include "sluice/status.h"

namespace sluice::simulate {

struct TrafficSummary {
  std::uint64_t events = 0;
  std::uint64_t skipped = 0;  // bad lines skipped (JsonOptions::skip_bad_lines)
  Micros first = 0;           // time of the first and last event (0 when none)
  Micros last = 0;
};

using EventSink = std::function<void(const Event&)>;

// Opens `paths` and hands every event to `sink` in time order. Errors: open_traffic's and the
// readers', unchanged (they name the file and line).
StatusOr<TrafficSummary> stream_traffic(const std::vector<std::string>& paths, TrafficNames& names,
                                        const OpenOptions& options, const EventSink& sink);

}  // namespace sluice::simulate
