#include "sluice/simulate/traffic_stream.h"

#include <memory>

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
    StatusOr<std::unique_ptr<TrafficReader>> reader = open_traffic(path, names, options);
    if (!reader.ok()) return reader.status();
    heads.push_back({.reader = std::move(*reader)});
  }
  for (Head& head : heads) {
    StatusOr<bool> more = head.reader->next(head.event);
    if (!more.ok()) return more.status();
    head.live = *more;
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
    StatusOr<bool> more = earliest->reader->next(earliest->event);
    if (!more.ok()) return more.status();
    earliest->live = *more;
  }
  for (const Head& head : heads) summary.skipped += head.reader->skipped();
  return summary;
}

}  // namespace sluice::simulate
