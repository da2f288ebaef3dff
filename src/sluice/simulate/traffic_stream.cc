#include "sluice/simulate/traffic_stream.h"

#include <memory>

#include "sluice/core/status_macros.h"

namespace sluice::simulate {

StatusOr<TrafficSummary> stream_traffic(const std::vector<std::string>& paths, TrafficNames& names,
                                        const OpenOptions& options, const EventSink& sink) {
  struct Head {
    std::unique_ptr<TrafficReader> reader;
    Event event;
    bool live = false;
  };
  std::vector<Head> heads;
  for (const std::string& path : paths) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<TrafficReader> reader,
                            open_traffic(path, names, options));
    heads.push_back({.reader = std::move(reader)});
  }
  for (Head& head : heads) {
    SLUICE_ASSIGN_OR_RETURN(head.live, head.reader->next(head.event));
  }
  TrafficSummary summary;
  for (;;) {
    // A linear scan: traffic comes in a handful of files, not hundreds.
    Head* earliest = nullptr;
    for (Head& head : heads) {
      if (head.live && (earliest == nullptr || head.event.time < earliest->event.time)) {
        earliest = &head;
      }
    }
    if (earliest == nullptr) break;
    if (summary.events++ == 0) summary.first = earliest->event.time;
    summary.last = earliest->event.time;
    sink(earliest->event);
    SLUICE_ASSIGN_OR_RETURN(earliest->live, earliest->reader->next(earliest->event));
  }
  for (const Head& head : heads) summary.skipped += head.reader->skipped();
  return summary;
}

}  // namespace sluice::simulate
