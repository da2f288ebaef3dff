#include "sluice/store/redis/script_set.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <utility>

#include "sluice/algorithm/catalogue.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/redis/scripts.h"

namespace sluice::store {
namespace {

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

// The number of constant `name` in the Lua sources (with_shared_blocks), or nullopt.
std::optional<int> lua_constant(std::string_view name) {
  for (const algorithm::ScriptKindRow& row : algorithm::script_kinds()) {
    if (row.lua_name == name) return static_cast<int>(row.kind);
  }
  static constexpr std::pair<std::string_view, EvaluateOperation> kOperations[] = {
      {"OP_ACQUIRE", EvaluateOperation::kAcquire},
      {"OP_INSPECT", EvaluateOperation::kInspect},
      {"OP_PENALIZED_ACQUIRE", EvaluateOperation::kPenalizedAcquire}};
  for (const auto& [constant, operation] : kOperations) {
    if (constant == name) return static_cast<int>(operation);
  }
  static constexpr std::pair<std::string_view, QuotaScriptOperation> kQuotaOperations[] = {
      {"QUOTA_CHARGE", QuotaScriptOperation::kCharge},
      {"QUOTA_REFUND", QuotaScriptOperation::kRefund},
      {"QUOTA_RESERVE", QuotaScriptOperation::kReserve},
      {"QUOTA_SETTLE", QuotaScriptOperation::kSettle},
      {"QUOTA_TAKE", QuotaScriptOperation::kTake},
      {"QUOTA_GIVE", QuotaScriptOperation::kGive}};
  for (const auto& [constant, operation] : kQuotaOperations) {
    if (constant == name) return static_cast<int>(operation);
  }
  return std::nullopt;
}

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `source` with each KIND_*, OP_* and QUOTA_* word replaced by its number.
std::string with_constants(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  std::size_t i = 0;
  while (i < source.size()) {
    if (!is_word_char(source[i])) {
      out.push_back(source[i++]);
      continue;
    }
    std::size_t end = i;
    while (end < source.size() && is_word_char(source[end])) ++end;
    const std::string_view word = source.substr(i, end - i);
    if (word.starts_with("KIND_") || word.starts_with("OP_") || word.starts_with("QUOTA_")) {
      const std::optional<int> number = lua_constant(word);
      if (!number) std::abort();  // the embedded sources are broken
      out += std::to_string(*number);
    } else {
      out += word;
    }
    i = end;
  }
  return out;
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
  source += splice(scripts::lua_evaluate(), "-- @algorithms", algorithms);
  return with_shared_blocks(source);
}

std::string lease_source(bool pinned_time) {
  std::string source(pinned_time ? scripts::lua_clock_pinned() : scripts::lua_clock_redis());
  source += scripts::lua_common();
  source += scripts::lua_lease();
  return with_shared_blocks(source);
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
  return with_constants(out);
}

std::string decision_request(ScriptOperation operation, std::span<const algorithm::Limit> limits,
                             std::int64_t cost, Micros calendar_now, std::string_view lease,
                             const algorithm::Penalty* penalty) {
  const bool inspect = operation == ScriptOperation::kInspect;
  if (inspect) penalty = nullptr;
  std::string request;
  request.reserve(8 * (4 + 5 * limits.size() + 6) + lease.size());
  append_double(request, 1);  // repeats (set_request_repeats)
  const EvaluateOperation number = inspect              ? EvaluateOperation::kInspect
                                   : penalty != nullptr ? EvaluateOperation::kPenalizedAcquire
                                                        : EvaluateOperation::kAcquire;
  append_double(request, static_cast<double>(number));
  append_double(request, static_cast<double>(cost));
  append_double(request, static_cast<double>(limits.size()));
  for (const algorithm::Limit& limit : limits) {
    const algorithm::ScriptRecord record = algorithm::script_record(limit, calendar_now);
    append_double(request, static_cast<double>(record.kind));
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

std::string quota_request(QuotaScriptOperation operation, std::span<const algorithm::Limit> limits,
                          std::int64_t cost, std::int64_t max_debt, Micros calendar_now) {
  std::string request = decision_request(ScriptOperation::kAcquire, limits, cost, calendar_now);
  std::string header;
  append_double(header, static_cast<double>(max_debt));  // in place of the repeat count
  append_double(header, static_cast<double>(operation));
  request.replace(0, header.size(), header);
  return request;
}

void set_request_repeats(std::string& request, std::size_t repeats) {
  std::string bytes;
  append_double(bytes, static_cast<double>(repeats));
  request.replace(0, bytes.size(), bytes);
}

const Clock* caller_clock(const Clock* pinned_for_tests, const redis::Multiplexer& client) {
  if (pinned_for_tests != nullptr) return pinned_for_tests;
  if (client.options().engine.clock == redis::ScriptClock::kCaller) return &SystemClock::instance();
  return nullptr;
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
  SLUICE_ASSIGN_OR_RETURN(const std::vector<algorithm::PolicyVerdict> verdicts,
                          unpack_verdicts(bytes.substr(0, kVerdictBytes)));
  algorithm::PolicyVerdict verdict = verdicts[0];
  const double blocked_until = double_at(bytes, kVerdictBytes);
  if (!(std::abs(blocked_until) < 0x1p53) || blocked_until != std::trunc(blocked_until)) {
    return unexpected(bytes);
  }
  if (blocked_until >= 0) verdict.verdict.blocked_until = static_cast<Micros>(blocked_until);
  return verdict;
}

ScriptSet::ScriptSet(bool pinned_time)
    : evaluate_(evaluate_source(pinned_time), "SLUICE.EVALUATE"),
      lease_(lease_source(pinned_time), "SLUICE.LEASE") {}

redis::FunctionLibrary store_function_library(bool caller_time) {
  const ScriptSet set(caller_time);
  const std::vector<redis::Script> scripts = {
      set.get(ScriptOperation::kAcquire), set.get(ScriptOperation::kLease),
      quota_script(caller_time), penalty_script(caller_time), heartbeat_script(caller_time)};
  return redis::function_library(scripts);
}

const redis::Script& ScriptSet::get(ScriptOperation operation,
                                    std::span<const algorithm::Limit> /*limits*/) const {
  return operation == ScriptOperation::kLease ? lease_ : evaluate_;
}

}  // namespace sluice::store
