// The JSON lines reader (traffic_reader.h): one object per line, fields found by a FieldMap
// (json_fields.h).
#include <charconv>
#include <chrono>
#include <utility>

#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/core/status_macros.h"
#include "sluice/simulate/input_file.h"
#include "sluice/simulate/json_fields.h"
#include "sluice/simulate/traffic_reader.h"

namespace sluice::simulate {
namespace {

std::string path_text(const std::vector<std::string>& path) {
  std::string text;
  for (const std::string& name : path) text += "." + name;
  return text;
}

// Reads a fixed count of digits at `at` (advanced past them).
bool digits(std::string_view text, std::size_t& at, std::size_t count, int& value) {
  if (at + count > text.size()) return false;
  value = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const char c = text[at + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  at += count;
  return true;
}

bool expect(std::string_view text, std::size_t& at, char c) {
  if (at >= text.size() || text[at] != c) return false;
  ++at;
  return true;
}

class JsonLinesReader final : public TrafficReader {
 public:
  JsonLinesReader(InputFile file, TrafficNames& names, JsonOptions options)
      : file_(std::move(file)), names_(names), options_(std::move(options)) {}

  StatusOr<bool> next(Event& event) override {
    for (;;) {
      std::string_view line;
      SLUICE_ASSIGN_OR_RETURN(const bool more, file_.next_line(line));
      if (!more) return false;
      ++line_number_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;  // blank
      Status parsed = parse(line, event);
      if (parsed.ok()) {
        previous_ = event.time;
        return true;
      }
      if (!options_.skip_bad_lines) {
        return Status(parsed.code(), file_.path() + ": line " + std::to_string(line_number_) +
                                         ": " + std::string(parsed.message()));
      }
      ++skipped_;
    }
  }

  std::uint64_t skipped() const override { return skipped_; }
  const std::string& path() const override { return file_.path(); }

 private:
  Status parse(std::string_view line, Event& event) {
    const FieldMap& fields = options_.fields;
    switch (extract_fields(line, fields, values_)) {
      case JsonShape::kObject:
        break;
      case JsonShape::kNotJson:
        return invalid_argument("not valid JSON");
      case JsonShape::kNotObject:
        return invalid_argument("not a JSON object");
    }
    using Kind = JsonValue::Kind;

    const JsonValue& time = values_.time;
    if (time.kind == Kind::kAbsent) {
      return invalid_argument(path_text(fields.time) + ": missing (the time)");
    }
    if (time.kind == Kind::kInteger) {
      event.time = time.integer;
    } else if (time.kind == Kind::kString) {
      StatusOr<Micros> at = parse_rfc3339(time.text);
      if (!at.ok()) {
        return invalid_argument(path_text(fields.time) + ": " + std::string(at.status().message()));
      }
      event.time = *at;
    } else {
      return invalid_argument(path_text(fields.time) +
                              ": must be an RFC 3339 string or an integer of µs since the epoch");
    }
    if (event.time < 0) return invalid_argument(path_text(fields.time) + ": before the epoch");
    if (event.time < previous_) {
      return invalid_argument(path_text(fields.time) + ": " + std::to_string(event.time) +
                              " µs is earlier than the line before (" + std::to_string(previous_) +
                              "): traffic must be in time order (sort it first)");
    }

    const JsonValue& key = values_.key;
    if (key.kind == Kind::kAbsent) {
      return invalid_argument(path_text(fields.key) + ": missing (the subject)");
    }
    if (key.kind == Kind::kInteger) {
      values_.key.text = std::to_string(key.integer);
    } else if (key.kind != Kind::kString) {
      return invalid_argument(path_text(fields.key) + ": must be a string or an integer");
    }
    SLUICE_RETURN_IF_ERROR(validate_subject(key.text, path_text(fields.key)));

    event.cost = 1;
    const JsonValue& cost = values_.cost;
    if (cost.kind != Kind::kAbsent) {
      if (cost.kind != Kind::kInteger) {
        return invalid_argument(path_text(fields.cost) + ": must be an integer");
      }
      event.cost = cost.integer;
      if (Status valid = algorithm::validate_cost(event.cost); !valid.ok()) {
        return invalid_argument(path_text(fields.cost) + ": " + std::string(valid.message()));
      }
    }
    SLUICE_ASSIGN_OR_RETURN(event.app, optional_name(values_.app, fields.app, names_.apps));
    SLUICE_ASSIGN_OR_RETURN(event.policy,
                            optional_name(values_.policy, fields.policy, names_.policies));
    event.subject = names_.subjects.intern(key.text);
    return Status();
  }

  static StatusOr<std::uint32_t> optional_name(const JsonValue& value,
                                               const std::vector<std::string>& path,
                                               NameTable& table) {
    if (value.kind == JsonValue::Kind::kAbsent || value.kind == JsonValue::Kind::kNull) {
      return kUnnamed;
    }
    if (value.kind != JsonValue::Kind::kString) {
      return invalid_argument(path_text(path) + ": must be a string");
    }
    return table.intern(value.text);
  }

  InputFile file_;
  TrafficNames& names_;
  JsonOptions options_;
  std::uint64_t line_number_ = 0;
  std::uint64_t skipped_ = 0;
  Micros previous_ = 0;
  JsonFields values_;  // reused: its strings keep their buffers from line to line
};

}  // namespace

StatusOr<Micros> parse_rfc3339(std::string_view text) {
  // date "T" time: YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM); 't', 'z' and ' ' are allowed too.
  std::size_t at = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  const bool date_ok = digits(text, at, 4, year) && expect(text, at, '-') &&
                       digits(text, at, 2, month) && expect(text, at, '-') &&
                       digits(text, at, 2, day);
  if (!date_ok) return invalid_argument("not an RFC 3339 date-time (YYYY-MM-DDTHH:MM:SSZ)");
  if (at >= text.size() || (text[at] != 'T' && text[at] != 't' && text[at] != ' ')) {
    return invalid_argument("not an RFC 3339 date-time: no 'T' between date and time");
  }
  ++at;
  const bool time_ok = digits(text, at, 2, hour) && expect(text, at, ':') &&
                       digits(text, at, 2, minute) && expect(text, at, ':') &&
                       digits(text, at, 2, second);
  if (!time_ok) return invalid_argument("not an RFC 3339 date-time: bad time of day");
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok()) return invalid_argument("not an RFC 3339 date-time: no such date");
  // 60: a leap second, which µs since the epoch cannot name; it is read as the next second.
  if (hour > 23 || minute > 59 || second > 60) {
    return invalid_argument("not an RFC 3339 date-time: bad time of day");
  }
  Micros fraction = 0;
  if (at < text.size() && text[at] == '.') {
    ++at;
    std::size_t count = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (count < 6) fraction = fraction * 10 + (text[at] - '0');
      ++count;
      ++at;
    }
    if (count == 0 || count > 9) {
      return invalid_argument("not an RFC 3339 date-time: a fraction has 1 to 9 digits");
    }
    for (std::size_t i = count; i < 6; ++i) fraction *= 10;
  }
  Micros offset = 0;
  if (at < text.size() && (text[at] == 'Z' || text[at] == 'z')) {
    ++at;
  } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
    const int sign = text[at] == '+' ? 1 : -1;
    ++at;
    int hours = 0, minutes = 0;
    if (!digits(text, at, 2, hours) || !expect(text, at, ':') || !digits(text, at, 2, minutes) ||
        hours > 23 || minutes > 59) {
      return invalid_argument("not an RFC 3339 date-time: bad offset (±HH:MM)");
    }
    offset = sign * (hours * kMicrosPerHour + minutes * kMicrosPerMinute);
  } else {
    return invalid_argument("not an RFC 3339 date-time: no offset (Z or ±HH:MM)");
  }
  if (at != text.size()) return invalid_argument("not an RFC 3339 date-time: text after it");
  const auto days = std::chrono::sys_days(date).time_since_epoch().count();
  return days * kMicrosPerDay + hour * kMicrosPerHour + minute * kMicrosPerMinute +
         second * kMicrosPerSecond + fraction - offset;
}

Status parse_field_map(std::string_view text, FieldMap& map) {
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t equals = entry.find('=');
    if (equals == std::string_view::npos) {
      return invalid_argument("--map: " + std::string(entry) + ": expected name=.path");
    }
    const std::string_view name = entry.substr(0, equals);
    std::string_view rest = entry.substr(equals + 1);
    std::vector<std::string> path;
    while (!rest.empty()) {
      if (rest.front() != '.') {
        return invalid_argument("--map: " + std::string(entry) +
                                ": a path is member names, each after a '.' (e.g. .client.ip)");
      }
      rest.remove_prefix(1);
      const std::size_t dot = rest.find('.');
      const std::string_view member = rest.substr(0, dot);
      if (member.empty()) {
        return invalid_argument("--map: " + std::string(entry) + ": empty member name");
      }
      path.emplace_back(member);
      rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot);
    }
    if (name == "t" || name == "time") {
      map.time = std::move(path);
    } else if (name == "key" || name == "subject") {
      map.key = std::move(path);
    } else if (name == "cost") {
      map.cost = std::move(path);
    } else if (name == "app") {
      map.app = std::move(path);
    } else if (name == "policy") {
      map.policy = std::move(path);
    } else {
      return invalid_argument("--map: " + std::string(name) +
                              ": unknown field (t, key, cost, app or policy)");
    }
  }
  if (map.time.empty()) return invalid_argument("--map: t: the time field needs a path");
  if (map.key.empty()) return invalid_argument("--map: key: the subject field needs a path");
  return Status();
}

StatusOr<std::unique_ptr<TrafficReader>> open_json_lines(const std::string& path,
                                                         TrafficNames& names,
                                                         const JsonOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(InputFile file, InputFile::open(path));
  return std::unique_ptr<TrafficReader>(
      std::make_unique<JsonLinesReader>(std::move(file), names, options));
}

}  // namespace sluice::simulate
