// The requests of SLUICE.EVALUATE, read from the bytes the Lua `evaluate` script reads
// (store/redis/scripts/evaluate.lua; script_set.h decision_request writes them): packed
// little-endian doubles — repeats, operation, cost, limit count, then kind and four parameters
// per limit (common.lua) — then the lease id, then for a penalized acquire the penalty's six
// parameters. Pure: no Redis here, so the parsing is tested on its own (request_test.cc).
//
// Where the script computes with any double it is given, the module accepts only what the store
// sends: integers below 2^53, limits that pass the policy validation (algorithm/validate.h), a
// cost within algorithm::kMaxCost. Anything else is an error (an "ERR ..." reply), never a guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::redis_module {

// evaluate.lua's OP_ACQUIRE, OP_INSPECT, OP_PENALIZED_ACQUIRE (script_set.h EvaluateOperation;
// redis_module_test.cc checks that the numbers agree).
enum class Operation : std::uint8_t { kAcquire = 0, kInspect = 1, kPenalizedAcquire = 2 };

// A calendar fixed window as the client sends it (calendar_window.lua): `limit` per period, and
// the ends of three candidate windows: the period before the client's (ends at ends[0]), the
// client's own (ends[1]) and the next (ends[2]). Redis's clock picks among them.
struct CalendarRecord {
  std::int64_t limit = 0;
  Micros ends[3] = {0, 0, 0};
};

// One limit of a request: the algorithm the memory store would run (every kind but the calendar
// window), or the calendar record.
struct RequestLimit {
  algorithm::ScriptKind kind = algorithm::ScriptKind::kSmoothBucket;
  algorithm::Limit limit;
  CalendarRecord calendar;
};

struct Request {
  std::int64_t repeats = 1;  // decisions in a row that send these bytes
  Operation operation = Operation::kAcquire;
  std::int64_t cost = 0;
  std::vector<RequestLimit> limits;
  std::string lease;                          // acquire only; empty when none
  std::optional<algorithm::Penalty> penalty;  // kPenalizedAcquire only
};

// Bytes of one verdict in the reply (seven doubles), and of a penalized acquire's (eight).
inline constexpr std::size_t kVerdictBytes = 7 * 8;
inline constexpr std::size_t kPenalizedVerdictBytes = 8 * 8;

// Reads one request. InvalidArgument naming what is wrong: too short, a field that is not an
// integer below 2^53, an unknown operation or kind, no limits, a limit or penalty that fails
// validation, a cost outside [0, kMaxCost].
StatusOr<Request> parse_request(std::string_view bytes);

// Keys one decision of `request` uses: its limits', and the penalty box's.
std::size_t keys_per_decision(const Request& request);

// Appends `value` as a packed little-endian double (values below 2^53 are exact), and several.
void append_double(std::string& out, double value);
void append_doubles(std::string& out, std::span<const double> values);

}  // namespace sluice::redis_module
