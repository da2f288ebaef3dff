// The algorithm catalogue: the ONE place that says what each algorithm is, beyond its decision
// arithmetic (token_bucket.h, leaky_bucket.h, window.h, concurrency.h). One row per algorithm
// (its name as documents write it, its parameters with their types, defaults and hints, what its
// size and window mean, how it scales, how the Redis scripts call it) and the functions of a
// Limit every other module asks instead of switching over Limit's alternatives: the size every
// verdict reports (nominal_size), the window that size is counted over (unit_length), the
// RateLimit-Policy window, scaling to a fraction, words for people, the script record.
//
// Adding an algorithm: its algorithm file (x.h/x.cc/x_test.cc, an alternative of Limit), its Lua
// block (store/redis/scripts/x.lua, a ScriptKind below), and one row in catalogue.cc. The
// catalogue's tests check that every row agrees with its algorithm.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "sluice/algorithm/limit.h"
#include "sluice/time.h"

namespace sluice::algorithm {

// How a parameter is written in a policy document.
enum class ParameterType : std::uint8_t {
  kCount,     // a JSON integer
  kDuration,  // a duration string, "500ms", "1s", "5m" (core/duration.h)
  kChoice,    // one of `choices`, by name; its value is the index
};

struct Parameter {
  std::string_view name;
  ParameterType type = ParameterType::kCount;
  // Absent from a document: an error when required, else `absent` (nullopt: stays unset, e.g.
  // token_bucket's `initial`, which then means "start full").
  bool required = true;
  std::optional<std::int64_t> absent;
  std::span<const std::string_view> choices;  // kChoice only
  // For people filling in a form: a new limit's value as a document writes it (empty: left out),
  // and what the field means.
  std::string_view example;
  std::string_view hint;
};

// How one phrase of `Algorithm::brief_words` is chosen (the console renders these): always; when
// parameter `field` holds the choice `operand`; when it does not; when it is set and below
// parameter `operand`; when it is set and not zero ("0s", "0ms": zero).
enum class PhraseWhen : std::uint8_t { kAlways, kEquals, kNotEquals, kBelow, kNonZero, kZero };
struct Phrase {
  std::string_view text;  // "{field}" placeholders; "{field+1}" adds one to a count
  PhraseWhen when = PhraseWhen::kAlways;
  std::string_view field;
  std::string_view operand;
};

// The kinds the Redis scripts tell limits apart by (store/redis/scripts, common.lua): a limit's
// record is its kind and four parameters (script_record). Several algorithms may share one kind
// (gcra is sent as the smooth bucket it is identical to), one algorithm may use several
// (token_bucket's refill modes, fixed_window with a calendar). The numbers are sent in every
// request and must not change.
enum class ScriptKind : std::uint8_t {
  kSmoothBucket = 1,
  kIntervalBucket = 2,
  kLeakyBucket = 3,
  kFixedWindow = 4,
  kSlidingWindow = 5,
  kSlidingLog = 6,
  kConcurrency = 7,
  kCalendarWindow = 8,
};
struct ScriptKindRow {
  ScriptKind kind;
  std::string_view lua_name;    // the constant the Lua sources write: "KIND_SMOOTH_BUCKET"
  std::string_view parameters;  // the four parameters it is sent, in order ("-": unused)
};
std::span<const ScriptKindRow> script_kinds();

struct Algorithm {
  std::string_view name;                  // as documents write it: "token_bucket"
  std::span<const Parameter> parameters;  // in document order
  std::string_view summary;               // one line: what it does
  std::string_view size;                  // what nominal_size is, in words
  std::string_view window;                // what unit_length is, in words
  std::string_view scaling;               // what scale_limit does to it, in words
  std::string_view quota_unit;            // RateLimit-Policy's qu; empty: requests (the default)
  bool calendar = false;                  // accepts a calendar period (calendar/time_zone)
  bool leases = false;                    // holds leases that release/renew act on
  bool state_grows = false;               // its state owns heap that grows with use
  std::span<const Phrase> brief_words;    // the console's short words
};

// Every algorithm, in the order of Limit's alternatives.
std::span<const Algorithm> algorithms();
const Algorithm& algorithm_of(const Limit& limit);
// The row named `name`, or nullptr.
const Algorithm* find_algorithm(std::string_view name);

// The size every verdict on `limit` reports as its `limit`: token_bucket capacity, gcra burst + 1,
// leaky_bucket its queue (floor(max_delay·rate/period) + 1), window algorithms and concurrency
// `limit`. The store's decisions, the degraded ones and the headers all report this.
std::int64_t nominal_size(const Limit& limit);

// The window or period that gives nominal_size its meaning (the Envoy RLS unit is chosen from
// it); 0 when there is none (concurrency). A calendar window: its longest period.
Micros unit_length(const Limit& limit);

// RateLimit-Policy's w: the time to go from empty to nominal_size (buckets: ceil(size·period /
// rate)), or the window; nullopt for concurrency, a calendar window (periods differ in length)
// and a product that overflows.
std::optional<Micros> quota_window(const Limit& limit);

// What one node may grant on its own under failure mode `local` or `split`: counts (capacity,
// window limits, concurrency) become max(1, floor(count · fraction)); rates slow down by
// stretching their period to ceil(period / fraction), which keeps the arithmetic exact.
// Precondition: 0 < fraction; fraction >= 1 returns `limit` unchanged.
Limit scale_limit(const Limit& limit, double fraction);

// Every parameter's value, in the row's order (a kChoice by index, a duration in µs; nullopt: an
// optional parameter left unset). A calendar is not a parameter: calendar_of.
std::array<std::optional<std::int64_t>, 5> parameter_values(const Limit& limit);
// The limit of algorithm `row` with `values` in the row's order (an unset required value: 0).
Limit make_limit(const Algorithm& row, std::span<const std::optional<std::int64_t>> values);
// How long a lease of `limit` lives unless renewed; nullopt when the limit holds no leases.
std::optional<Micros> lease_ttl(const Limit& limit);
// The calendar of a calendar window, else nullptr.
const Calendar* calendar_of(const Limit& limit);

// What a limit admits in words, every parameter that changes it included, durations as documents
// write them ("1s"): "5 at once, refilled 2 per 1s (smooth)" (policy/describe.h lists them all).
std::string limit_words(const Limit& limit);

// A limit as the Redis scripts take it: its kind and four parameters (common.lua).
// `calendar_now`: the client's time, from which a calendar window's bounds (this period's and
// the next) are computed.
struct ScriptRecord {
  ScriptKind kind;
  std::int64_t parameters[4];
};
ScriptRecord script_record(const Limit& limit, Micros calendar_now);

}  // namespace sluice::algorithm
