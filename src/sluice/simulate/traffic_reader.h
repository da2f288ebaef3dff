// Readers of traffic files (docs/backtesting.md, "Formats"): JSON lines and the binary recording
// format, each streaming one event at a time so a replay's memory does not grow with the file.
// TrafficReader is what both offer; open_traffic picks the reader from the file's first bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/simulate/traffic.h"
#include "sluice/status.h"

namespace sluice::simulate {

class TrafficReader {
 public:
  virtual ~TrafficReader() = default;
  // Reads the next event into `event`, its names interned into the TrafficNames the reader was
  // opened with; false at the end. Events come in time order: a reader refuses (or, told to,
  // skips) one earlier than its predecessor. Errors: InvalidArgument naming the file, the line
  // (or byte offset) and the field; DataLoss for a truncated or corrupt file.
  virtual StatusOr<bool> next(Event& event) = 0;
  // Lines skipped as bad (JsonOptions::skip_bad_lines); 0 for readers that skip nothing.
  virtual std::uint64_t skipped() const { return 0; }
  virtual const std::string& path() const = 0;
};

// Where each field of a JSON line is: a path of object member names, e.g. {"client", "ip"} for
// `.client.ip`. An empty path for app, policy or cost: that field is not read.
struct FieldMap {
  std::vector<std::string> time = {"time"};
  std::vector<std::string> key = {"key"};
  std::vector<std::string> cost = {"cost"};
  std::vector<std::string> app = {"app"};
  std::vector<std::string> policy = {"policy"};
};

// Applies a mapping such as "t=.ts,key=.client.ip,cost=.bytes" (names: t or time, key or
// subject, cost, app, policy; a path is member names each after a '.'; an empty path turns an
// optional field off) to `map`. InvalidArgument naming the bad entry.
Status parse_field_map(std::string_view text, FieldMap& map);

struct JsonOptions {
  FieldMap fields;
  // Skip (and count) lines that are not JSON objects, lack the time or key field, hold a bad
  // value, or are earlier than the line before; otherwise the first such line is an error.
  bool skip_bad_lines = false;
};

// µs since the Unix epoch of an RFC 3339 date-time ("2026-11-28T18:30:00.123456Z", offsets
// "+01:00", fractions up to 9 digits, truncated to µs). InvalidArgument saying why not.
StatusOr<Micros> parse_rfc3339(std::string_view text);

struct OpenOptions {
  JsonOptions json;
};

// Opens `path` (gzip-compressed or not): the binary recording format when it starts with the
// format's magic (binary_format.h), else JSON lines.
StatusOr<std::unique_ptr<TrafficReader>> open_traffic(const std::string& path, TrafficNames& names,
                                                      const OpenOptions& options);

// A reader of JSON lines, exposed for tests and benchmarks (open_traffic picks it).
StatusOr<std::unique_ptr<TrafficReader>> open_json_lines(const std::string& path,
                                                         TrafficNames& names,
                                                         const JsonOptions& options);

}  // namespace sluice::simulate
