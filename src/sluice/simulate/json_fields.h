// The fields of one JSON line that a FieldMap names, pulled out by nlohmann's SAX parser: the
// line is parsed fully (so malformed JSON is still refused) but no document is built — no map
// node or value per member, only the mapped values kept. In replay_benchmark it read 1.35-1.66 M
// lines/s where parsing each line into a json value read 1.2 M (docs/benchmarks.md, issue 36).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "sluice/simulate/traffic_reader.h"

namespace sluice::simulate {

struct JsonValue {
  enum class Kind : std::uint8_t { kAbsent, kNull, kInteger, kString, kOther };
  Kind kind = Kind::kAbsent;
  std::int64_t integer = 0;
  std::string text;
};

struct JsonFields {
  JsonValue time, key, cost, app, policy;
};

enum class JsonShape : std::uint8_t { kObject, kNotJson, kNotObject };

// Parses `line` and fills `out` with the values at `map`'s paths (kAbsent where missing; a
// value inside an array is never matched). kNotJson / kNotObject: `out` is unspecified.
JsonShape extract_fields(std::string_view line, const FieldMap& map, JsonFields& out);

}  // namespace sluice::simulate
