#include "sluice/store/redis/script_set.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "sluice/store/redis/scripts.h"

namespace sluice::store {
namespace {

// One limit as the scripts take it: common.lua's kind and four parameters.
struct LimitRecord {
  int kind;
  std::int64_t parameters[4];
};

LimitRecord limit_record(const algorithm::Limit& limit, Micros calendar_now) {
  return std::visit(
      [calendar_now](const auto& p) -> LimitRecord {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, algorithm::TokenBucket>) {
          const int kind = p.refill_mode == algorithm::RefillMode::kInterval ? 2 : 1;
          return {kind, {p.capacity, p.refill, p.period, p.initial.value_or(p.capacity)}};
        } else if constexpr (std::is_same_v<P, algorithm::Gcra>) {
          // The smooth bucket gcra is identical to (DESIGN.md §2), starting full.
          return {1, {p.burst + 1, p.rate, p.period, p.burst + 1}};
        } else if constexpr (std::is_same_v<P, algorithm::LeakyBucket>) {
          return {3, {p.rate, p.period, p.max_delay, 0}};
        } else if constexpr (std::is_same_v<P, algorithm::FixedWindow>) {
          if (p.calendar) {
            // The bounds of the period the client's clock is in and of the next one: the script
            // picks by Redis's TIME (calendar.lua), so a client a little off decides nothing.
            const algorithm::PeriodBounds current =
                algorithm::calendar_period(*p.calendar, calendar_now);
            const algorithm::PeriodBounds next =
                algorithm::calendar_period(*p.calendar, current.end);
            return {8, {p.limit, current.start, current.end, next.end}};
          }
          return {4, {p.limit, p.window, 0, 0}};
        } else if constexpr (std::is_same_v<P, algorithm::SlidingWindow>) {
          return {5, {p.limit, p.window, 0, 0}};
        } else if constexpr (std::is_same_v<P, algorithm::SlidingLog>) {
          return {6, {p.limit, p.window, 0, 0}};
        } else {
          static_assert(std::is_same_v<P, algorithm::Concurrency>);
          return {7, {p.limit, p.lease_ttl, 0, 0}};
        }
      },
      limit);
}

// Lua's struct '<d': an IEEE double, little-endian. Exact for the integers sent (below 2^53).
void append_double(std::string& out, double value) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

double double_at(std::string_view bytes, std::size_t offset) {
  std::uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) {
    bits |= std::uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  return std::bit_cast<double>(bits);
}

Status unexpected(std::string_view bytes) {
  return internal_error("redis store: unexpected script reply of " + std::to_string(bytes.size()) +
                        " bytes");
}

// Replaces the line holding `marker` in `source` by `insert`.
std::string splice(std::string_view source, std::string_view marker, std::string_view insert) {
  const std::size_t at = source.find(marker);
  if (at == std::string_view::npos) std::abort();             // the embedded sources are broken
  const std::size_t line_start = source.rfind('\n', at) + 1;  // npos + 1 == 0: first line
  const std::size_t line_end = source.find('\n', at);
  std::string out(source.substr(0, line_start));
  out += insert;
  if (line_end != std::string_view::npos) out += source.substr(line_end + 1);
  return out;
}

std::string evaluate_source(bool pinned_time) {
  std::string algorithms;
  for (const std::string_view block :
       {scripts::lua_tat(), scripts::lua_token_bucket(), scripts::lua_interval_bucket(),
        scripts::lua_leaky_bucket(), scripts::lua_fixed_window(), scripts::lua_calendar_window(),
        scripts::lua_sliding_window(), scripts::lua_sliding_log(), scripts::lua_concurrency()}) {
    algorithms += block;
  }
  std::string source(pinned_time ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
  source += scripts::lua_common();
  source += splice(scripts::lua_evaluate(), "-- @algorithms", with_shared_blocks(algorithms));
  return source;
}

std::string lease_source(bool pinned_time) {
  std::string source(pinned_time ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
  source += scripts::lua_common();
  source += scripts::lua_lease();
  return source;
}

}  // namespace

std::string with_shared_blocks(std::string_view source) {
  std::string out(source);
  for (const auto& [marker, block] :
       {std::pair{"-- @tat\n", scripts::lua_tat()},
        std::pair{"-- @interval_state\n", scripts::lua_interval_state()},
        std::pair{"-- @fixed_window_state\n", scripts::lua_fixed_window_state()},
        std::pair{"-- @sliding_window_state\n", scripts::lua_sliding_window_state()},
        std::pair{"-- @sliding_retry\n", scripts::lua_sliding_retry()}}) {
    while (out.find(marker) != std::string::npos) out = splice(out, marker, block);
  }
  return out;
}

int script_kind(const algorithm::Limit& limit) { return limit_record(limit, 0).kind; }

std::string decision_request(ScriptOperation operation, std::span<const algorithm::Limit> limits,
                             std::int64_t cost, Micros calendar_now, std::string_view lease,
                             const algorithm::Penalty* penalty) {
  const bool inspect = operation == ScriptOperation::kInspect;
  if (inspect) penalty = nullptr;
  std::string request;
  request.reserve(8 * (4 + 5 * limits.size() + 6) + lease.size());
  append_double(request, 1);  // repeats (set_request_repeats)
  append_double(request, inspect ? 1 : penalty != nullptr ? 2 : 0);
  append_double(request, static_cast<double>(cost));
  append_double(request, static_cast<double>(limits.size()));
  for (const algorithm::Limit& limit : limits) {
    const LimitRecord record = limit_record(limit, calendar_now);
    append_double(request, record.kind);
    for (const std::int64_t parameter : record.parameters) {
      append_double(request, static_cast<double>(parameter));
    }
  }
  if (!inspect) request += lease;
  if (penalty != nullptr) {
    for (const std::int64_t parameter : {penalty->after, penalty->within, penalty->block,
                                         penalty->escalate, penalty->max, penalty->quiet}) {
      append_double(request, static_cast<double>(parameter));
    }
  }
  return request;
}

std::string quota_request(int operation, std::span<const algorithm::Limit> limits,
                          std::int64_t cost, std::int64_t max_debt, Micros calendar_now) {
  std::string request = decision_request(ScriptOperation::kAcquire, limits, cost, calendar_now);
  std::string header;
  append_double(header, static_cast<double>(max_debt));  // in place of the repeat count
  append_double(header, operation);
  request.replace(0, header.size(), header);
  return request;
}

void set_request_repeats(std::string& request, std::size_t repeats) {
  std::string bytes;
  append_double(bytes, static_cast<double>(repeats));
  request.replace(0, bytes.size(), bytes);
}

void append_pinned_time(std::vector<std::string>& args, const Clock* pinned_clock) {
  if (pinned_clock != nullptr) args.push_back(std::to_string(pinned_clock->now()));
}

std::size_t verdict_count(ScriptOperation operation, std::size_t limits) {
  return operation == ScriptOperation::kInspect ? limits : 1;
}

StatusOr<std::vector<algorithm::PolicyVerdict>> unpack_verdicts(std::string_view bytes) {
  if (bytes.empty() || bytes.size() % kVerdictBytes != 0) return unexpected(bytes);
  std::vector<algorithm::PolicyVerdict> verdicts;
  for (std::size_t first = 0; first < bytes.size(); first += kVerdictBytes) {
    std::int64_t field[7];
    for (std::size_t i = 0; i < 7; ++i) {
      const double value = double_at(bytes, first + 8 * i);
      // Integers below 2^53 in magnitude, as every value the scripts compute is.
      if (!(std::abs(value) < 0x1p53) || value != std::trunc(value)) return unexpected(bytes);
      field[i] = static_cast<std::int64_t>(value);
    }
    const auto optional = [](std::int64_t v) { return v < 0 ? std::nullopt : std::optional(v); };
    algorithm::PolicyVerdict verdict;
    verdict.verdict = {.allowed = field[0] == 1,
                       .limit = field[1],
                       .remaining = field[2],
                       .retry_after = optional(field[3]),
                       .reset_after = field[4],
                       .delay = optional(field[5])};
    if (field[6] < 0) return unexpected(bytes);
    verdict.limit_index = static_cast<std::size_t>(field[6]);
    verdicts.push_back(verdict);
  }
  return verdicts;
}

StatusOr<algorithm::PolicyVerdict> unpack_penalized_verdict(std::string_view bytes) {
  if (bytes.size() != kPenalizedVerdictBytes) return unexpected(bytes);
  StatusOr<std::vector<algorithm::PolicyVerdict>> verdicts =
      unpack_verdicts(bytes.substr(0, kVerdictBytes));
  if (!verdicts.ok()) return verdicts.status();
  algorithm::PolicyVerdict verdict = (*verdicts)[0];
  const double blocked_until = double_at(bytes, kVerdictBytes);
  if (!(std::abs(blocked_until) < 0x1p53) || blocked_until != std::trunc(blocked_until)) {
    return unexpected(bytes);
  }
  if (blocked_until >= 0) verdict.verdict.blocked_until = static_cast<Micros>(blocked_until);
  return verdict;
}

ScriptSet::ScriptSet(bool pinned_time)
    : evaluate_(evaluate_source(pinned_time)), lease_(lease_source(pinned_time)) {}

const redis::Script& ScriptSet::get(ScriptOperation operation,
                                    std::span<const algorithm::Limit> /*limits*/) const {
  return operation == ScriptOperation::kLease ? lease_ : evaluate_;
}

}  // namespace sluice::store
