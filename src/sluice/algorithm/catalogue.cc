#include "sluice/algorithm/catalogue.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

#include "sluice/algorithm/leaky_bucket.h"
#include "sluice/core/duration.h"

namespace sluice::algorithm {
namespace {

constexpr std::string_view kRefillModes[] = {"smooth", "interval"};
constexpr std::string_view kDeniedCosts[] = {"free", "counted"};

// The rate algorithms' period, the same parameter in each.
constexpr Parameter kPeriod{.name = "period",
                            .type = ParameterType::kDuration,
                            .example = "1s",
                            .hint = "e.g. 1s, 500ms, 1m"};

constexpr Parameter kTokenBucketParameters[] = {
    {.name = "capacity", .example = "10", .hint = "tokens at most (the burst)"},
    {.name = "refill", .example = "5", .hint = "tokens added per period"},
    kPeriod,
    {.name = "refill_mode",
     .type = ParameterType::kChoice,
     .required = false,
     .absent = 0,
     .choices = kRefillModes},
    {.name = "initial", .required = false, .hint = "optional"},
};
constexpr Parameter kGcraParameters[] = {
    {.name = "rate", .example = "10"},
    kPeriod,
    {.name = "burst",
     .required = false,
     .absent = 0,
     .example = "5",
     .hint = "extra requests at once"},
};
constexpr Parameter kLeakyBucketParameters[] = {
    {.name = "rate", .example = "10"},
    kPeriod,
    {.name = "max_delay",
     .type = ParameterType::kDuration,
     .required = false,
     .absent = 0,
     .example = "500ms",
     .hint = "longest wait, e.g. 500ms"},
};
constexpr Parameter kWindowParameters[] = {
    {.name = "limit", .example = "100"},
    {.name = "window",
     .type = ParameterType::kDuration,
     .example = "1m",
     .hint = "e.g. 1s, 1m, 1h"},
};
constexpr Parameter kFixedWindowParameters[] = {
    kWindowParameters[0],
    kWindowParameters[1],
    {.name = "denied_cost",
     .type = ParameterType::kChoice,
     .required = false,
     .absent = 0,
     .choices = kDeniedCosts,
     .hint = "free: a denial takes nothing; counted: it is counted too (envoyproxy/ratelimit)"},
};
constexpr Parameter kConcurrencyParameters[] = {
    {.name = "limit", .example = "10"},
    {.name = "lease_ttl",
     .type = ParameterType::kDuration,
     .example = "30s",
     .hint = "a lease expires after, e.g. 30s"},
};

// The console's words (web/src/words.js renders them): "{x}" is the value as written, "{x:words}"
// a duration as words ("1s" -> "second"), "{x+1}" a count plus one.
constexpr Phrase kTokenBucketWords[] = {
    {.text = "{capacity} at once, "},
    {.text = "{refill} added every {period:words}",
     .when = PhraseWhen::kEquals,
     .field = "refill_mode",
     .operand = "interval"},
    {.text = "{refill} per {period:words}",
     .when = PhraseWhen::kNotEquals,
     .field = "refill_mode",
     .operand = "interval"},
    {.text = ", new keys start with {initial}",
     .when = PhraseWhen::kBelow,
     .field = "initial",
     .operand = "capacity"},
};
constexpr Phrase kGcraWords[] = {{.text = "{rate} per {period:words}, up to {burst+1} at once"}};
constexpr Phrase kLeakyBucketWords[] = {
    {.text = "{rate} per {period:words} paced evenly, "},
    {.text = "waiting up to {max_delay}", .when = PhraseWhen::kNonZero, .field = "max_delay"},
    {.text = "no waiting", .when = PhraseWhen::kZero, .field = "max_delay"},
};
constexpr Phrase kFixedWindowWords[] = {{.text = "{limit} per {window:words}"}};
constexpr Phrase kSlidingWindowWords[] = {{.text = "{limit} in any {window:words} (estimated)"}};
constexpr Phrase kSlidingLogWords[] = {{.text = "{limit} in any {window:words} (exact)"}};
constexpr Phrase kConcurrencyWords[] = {{.text = "{limit} in flight, lease {lease_ttl}"}};

// In the order of Limit's alternatives (catalogue_test checks it).
constexpr Algorithm kAlgorithms[] = {
    {.name = "token_bucket",
     .parameters = kTokenBucketParameters,
     .summary = "up to capacity at once; refill tokens come back per period, continuously "
                "(smooth) or all at once each full period (interval)",
     .size = "capacity",
     .window = "period",
     .scaling = "capacity (and initial) times the fraction, at least 1; period stretched",
     .brief_words = kTokenBucketWords},
    {.name = "gcra",
     .parameters = kGcraParameters,
     .summary = "rate per period, burst extra at once (redis-cell); admits like a smooth "
                "token_bucket of capacity burst + 1",
     .size = "burst + 1",
     .window = "period",
     .scaling = "burst + 1 times the fraction, at least 1; period stretched",
     .brief_words = kGcraWords},
    {.name = "leaky_bucket",
     .parameters = kLeakyBucketParameters,
     .summary = "paces requests rate per period, each told to wait up to max_delay",
     .size = "the queue: floor(max_delay * rate / period) + 1",
     .window = "period",
     .scaling = "period stretched",
     .brief_words = kLeakyBucketWords},
    {.name = "fixed_window",
     .parameters = kFixedWindowParameters,
     .summary = "at most limit per window aligned to the epoch, or per calendar period in a "
                "time zone",
     .size = "limit",
     .window = "window (a calendar period: its longest)",
     .scaling = "limit times the fraction, at least 1",
     .calendar = true,
     .brief_words = kFixedWindowWords},
    {.name = "sliding_window",
     .parameters = kWindowParameters,
     .summary = "at most limit in any window, estimated from the previous and current windows",
     .size = "limit",
     .window = "window",
     .scaling = "limit times the fraction, at least 1",
     .brief_words = kSlidingWindowWords},
    {.name = "sliding_log",
     .parameters = kWindowParameters,
     .summary = "at most limit in any window, exactly: one entry per admitted unit",
     .size = "limit",
     .window = "window",
     .scaling = "limit times the fraction, at least 1",
     .state_grows = true,
     .brief_words = kSlidingLogWords},
    {.name = "concurrency",
     .parameters = kConcurrencyParameters,
     .summary = "at most limit held by live leases; a lease not renewed dies after lease_ttl",
     .size = "limit",
     .window = "none",
     .scaling = "limit times the fraction, at least 1",
     .quota_unit = "concurrent-requests",
     .leases = true,
     .state_grows = true,
     .brief_words = kConcurrencyWords},
};
static_assert(std::size(kAlgorithms) == std::variant_size_v<Limit>);

constexpr ScriptKindRow kScriptKinds[] = {
    {ScriptKind::kSmoothBucket, "KIND_SMOOTH_BUCKET", "capacity, refill, period, initial"},
    {ScriptKind::kIntervalBucket, "KIND_INTERVAL_BUCKET", "capacity, refill, period, initial"},
    {ScriptKind::kLeakyBucket, "KIND_LEAKY_BUCKET", "rate, period, max_delay, -"},
    {ScriptKind::kFixedWindow, "KIND_FIXED_WINDOW", "limit, window, denied_cost, -"},
    {ScriptKind::kSlidingWindow, "KIND_SLIDING_WINDOW", "limit, window, -, -"},
    {ScriptKind::kSlidingLog, "KIND_SLIDING_LOG", "limit, window, -, -"},
    {ScriptKind::kConcurrency, "KIND_CONCURRENCY", "limit, lease_ttl, -, -"},
    {ScriptKind::kCalendarWindow, "KIND_CALENDAR_WINDOW", "limit, s0, s1, s2"},
};

// ceil(a·b/c); nullopt on overflow or c <= 0.
std::optional<Micros> ceil_product(std::int64_t a, Micros b, std::int64_t c) {
  std::int64_t product = 0;
  if (c <= 0 || __builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product / c + (product % c > 0 ? 1 : 0);
}

std::int64_t scale_count(std::int64_t count, double fraction) {
  return std::max<std::int64_t>(
      1, static_cast<std::int64_t>(std::floor(static_cast<double>(count) * fraction)));
}

Micros stretch(Micros period, double fraction) {
  return static_cast<Micros>(std::ceil(static_cast<double>(period) / fraction));
}

std::string words(const TokenBucket& p) {
  std::string text = std::to_string(p.capacity) + " at once, refilled " + std::to_string(p.refill);
  text += p.refill_mode == RefillMode::kInterval
              ? " every " + format_duration(p.period) + " all at once (interval)"
              : " per " + format_duration(p.period) + " (smooth)";
  // A bucket starts full unless `initial` says otherwise.
  if (p.initial && *p.initial < p.capacity) {
    text += ", new subjects start with " + std::to_string(*p.initial);
  }
  return text;
}

std::string words(const Gcra& p) {
  // Admits like a smooth bucket of burst + 1.
  return std::to_string(p.rate) + " per " + format_duration(p.period) + ", up to " +
         std::to_string(p.burst + 1) + " at once (burst " + std::to_string(p.burst) + ")";
}

std::string words(const LeakyBucket& p) {
  return std::to_string(p.rate) + " per " + format_duration(p.period) + " paced evenly, " +
         (p.max_delay > 0 ? "waiting up to " + format_duration(p.max_delay) : "no waiting");
}

std::string words(const FixedWindow& p) {
  if (p.calendar) {
    return std::to_string(p.limit) + " per calendar " +
           std::string(calendar_period_name(p.calendar->period)) + " in " +
           std::string(p.calendar->time_zone);
  }
  return std::to_string(p.limit) + " per " + format_duration(p.window) +
         (p.denied_cost == DeniedCost::kCounted ? ", denied requests counted too" : "");
}

std::string words(const SlidingWindow& p) {
  return std::to_string(p.limit) + " in any " + format_duration(p.window) + " (estimated)";
}

std::string words(const SlidingLog& p) {
  return std::to_string(p.limit) + " in any " + format_duration(p.window) + " (exact)";
}

std::string words(const Concurrency& p) {
  return std::to_string(p.limit) + " at once, lease " + format_duration(p.lease_ttl);
}

}  // namespace

std::span<const Algorithm> algorithms() { return kAlgorithms; }

std::span<const ScriptKindRow> script_kinds() { return kScriptKinds; }

const Algorithm& algorithm_of(const Limit& limit) { return kAlgorithms[limit.index()]; }

const Algorithm* find_algorithm(std::string_view name) {
  for (const Algorithm& row : kAlgorithms) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

std::string_view algorithm_name(const Limit& limit) { return algorithm_of(limit).name; }

std::int64_t nominal_size(const Limit& limit) {
  return std::visit(
      [](const auto& p) -> std::int64_t {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TokenBucket>) {
          return p.capacity;
        } else if constexpr (std::is_same_v<P, Gcra>) {
          return p.burst + 1;
        } else if constexpr (std::is_same_v<P, LeakyBucket>) {
          return queue_capacity(p);
        } else {
          return p.limit;
        }
      },
      limit);
}

Micros unit_length(const Limit& limit) {
  return std::visit(
      [](const auto& p) -> Micros {
        if constexpr (requires { p.window; }) {
          return p.window;
        } else if constexpr (requires { p.period; }) {
          return p.period;
        } else {
          return 0;
        }
      },
      limit);
}

std::optional<Micros> quota_window(const Limit& limit) {
  return std::visit(
      [&limit](const auto& p) -> std::optional<Micros> {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TokenBucket>) {
          return ceil_product(p.capacity, p.period, p.refill);
        } else if constexpr (std::is_same_v<P, Gcra> || std::is_same_v<P, LeakyBucket>) {
          return ceil_product(nominal_size(limit), p.period, p.rate);
        } else if constexpr (std::is_same_v<P, FixedWindow>) {
          // A calendar period has no one length (23- to 25-hour days, 28- to 31-day months).
          if (p.calendar) return std::nullopt;
          return p.window;
        } else if constexpr (requires { p.window; }) {
          return p.window;
        } else {
          return std::nullopt;
        }
      },
      limit);
}

Limit scale_limit(const Limit& limit, double fraction) {
  if (fraction >= 1.0) return limit;
  return std::visit(
      [fraction](auto p) -> Limit {
        using P = decltype(p);
        if constexpr (std::is_same_v<P, TokenBucket>) {
          p.capacity = scale_count(p.capacity, fraction);
          p.period = stretch(p.period, fraction);
          if (p.initial) {
            p.initial = std::min(
                p.capacity,
                static_cast<std::int64_t>(std::floor(static_cast<double>(*p.initial) * fraction)));
          }
        } else if constexpr (std::is_same_v<P, Gcra>) {
          p.burst = scale_count(p.burst + 1, fraction) - 1;
          p.period = stretch(p.period, fraction);
        } else if constexpr (std::is_same_v<P, LeakyBucket>) {
          p.period = stretch(p.period, fraction);
        } else if constexpr (std::is_same_v<P, FixedWindow>) {
          // A window of 0 (a counting one that admits nothing) admits nothing at any fraction.
          if (p.limit > 0) p.limit = scale_count(p.limit, fraction);
        } else {
          p.limit = scale_count(p.limit, fraction);  // sliding windows and log, concurrency
        }
        return p;
      },
      limit);
}

std::array<std::optional<std::int64_t>, 5> parameter_values(const Limit& limit) {
  return std::visit(
      [](const auto& p) -> std::array<std::optional<std::int64_t>, 5> {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TokenBucket>) {
          return {p.capacity, p.refill, p.period, static_cast<std::int64_t>(p.refill_mode),
                  p.initial};
        } else if constexpr (std::is_same_v<P, Gcra>) {
          return {p.rate, p.period, p.burst};
        } else if constexpr (std::is_same_v<P, LeakyBucket>) {
          return {p.rate, p.period, p.max_delay};
        } else if constexpr (std::is_same_v<P, Concurrency>) {
          return {p.limit, p.lease_ttl};
        } else if constexpr (std::is_same_v<P, FixedWindow>) {
          // Left out when free (the default), so documents without it read and write unchanged.
          return {p.limit, p.window,
                  p.denied_cost == DeniedCost::kCounted ? std::optional<std::int64_t>(1)
                                                        : std::nullopt};
        } else {
          return {p.limit, p.window};
        }
      },
      limit);
}

Limit make_limit(const Algorithm& row, std::span<const std::optional<std::int64_t>> values) {
  const auto at = [&values](std::size_t i) {
    return i < values.size() ? values[i].value_or(0) : 0;
  };
  const auto index = static_cast<std::size_t>(&row - kAlgorithms);
  switch (index) {
    case 0:
      return TokenBucket{.capacity = at(0),
                         .refill = at(1),
                         .period = at(2),
                         .refill_mode = at(3) == 1 ? RefillMode::kInterval : RefillMode::kSmooth,
                         .initial = values.size() > 4 ? values[4] : std::nullopt};
    case 1:
      return Gcra{.rate = at(0), .period = at(1), .burst = at(2)};
    case 2:
      return LeakyBucket{.rate = at(0), .period = at(1), .max_delay = at(2)};
    case 3:
      return FixedWindow{.limit = at(0),
                         .window = at(1),
                         .denied_cost = at(2) == 1 ? DeniedCost::kCounted : DeniedCost::kFree};
    case 4:
      return SlidingWindow{.limit = at(0), .window = at(1)};
    case 5:
      return SlidingLog{.limit = at(0), .window = at(1)};
    default:
      return Concurrency{.limit = at(0), .lease_ttl = at(1)};
  }
}

std::optional<Micros> lease_ttl(const Limit& limit) {
  const auto* concurrency = std::get_if<Concurrency>(&limit);
  return concurrency != nullptr ? std::optional(concurrency->lease_ttl) : std::nullopt;
}

const Calendar* calendar_of(const Limit& limit) {
  const auto* fixed = std::get_if<FixedWindow>(&limit);
  return fixed != nullptr && fixed->calendar ? &*fixed->calendar : nullptr;
}

std::string limit_words(const Limit& limit) {
  return std::visit([](const auto& p) { return words(p); }, limit);
}

ScriptRecord script_record(const Limit& limit, Micros calendar_now) {
  return std::visit(
      [calendar_now](const auto& p) -> ScriptRecord {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, TokenBucket>) {
          const ScriptKind kind = p.refill_mode == RefillMode::kInterval
                                      ? ScriptKind::kIntervalBucket
                                      : ScriptKind::kSmoothBucket;
          return {kind, {p.capacity, p.refill, p.period, p.initial.value_or(p.capacity)}};
        } else if constexpr (std::is_same_v<P, Gcra>) {
          // The smooth bucket gcra is identical to (DESIGN.md §2), starting full.
          return {ScriptKind::kSmoothBucket, {p.burst + 1, p.rate, p.period, p.burst + 1}};
        } else if constexpr (std::is_same_v<P, LeakyBucket>) {
          return {ScriptKind::kLeakyBucket, {p.rate, p.period, p.max_delay, 0}};
        } else if constexpr (std::is_same_v<P, FixedWindow>) {
          if (p.calendar) {
            // The bounds of the period the client's clock is in and of the next one: the script
            // picks by Redis's TIME (calendar_window.lua), so a client a little off decides
            // nothing.
            const PeriodBounds current = calendar_period(*p.calendar, calendar_now);
            const PeriodBounds next = calendar_period(*p.calendar, current.end);
            return {ScriptKind::kCalendarWindow, {p.limit, current.start, current.end, next.end}};
          }
          return {ScriptKind::kFixedWindow,
                  {p.limit, p.window, static_cast<std::int64_t>(p.denied_cost), 0}};
        } else if constexpr (std::is_same_v<P, SlidingWindow>) {
          return {ScriptKind::kSlidingWindow, {p.limit, p.window, 0, 0}};
        } else if constexpr (std::is_same_v<P, SlidingLog>) {
          return {ScriptKind::kSlidingLog, {p.limit, p.window, 0, 0}};
        } else {
          static_assert(std::is_same_v<P, Concurrency>);
          return {ScriptKind::kConcurrency, {p.limit, p.lease_ttl, 0, 0}};
        }
      },
      limit);
}

}  // namespace sluice::algorithm
