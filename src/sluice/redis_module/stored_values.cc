#include "sluice/redis_module/stored_values.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/validate.h"
#include "sluice/redis_module/request.h"

namespace sluice::redis_module {
namespace {

constexpr double kExact = 0x1p53;
constexpr std::int64_t kExactInteger = std::int64_t{1} << 53;

// The integer in the packed double at `offset`, when it is one below 2^53 in magnitude.
std::optional<std::int64_t> integer_at(std::string_view bytes, std::size_t offset) {
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    bits |= std::uint64_t{static_cast<unsigned char>(bytes[offset + i])} << (8 * i);
  }
  const double value = std::bit_cast<double>(bits);
  if (!(std::fabs(value) < kExact) || value != std::trunc(value)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// A tag byte and `count` integers after it: '<c1d...' of exactly 1 + 8·count bytes.
template <std::size_t count>
std::optional<std::array<std::int64_t, count>> tagged(std::string_view value, char tag) {
  if (value.size() != 1 + 8 * count || value[0] != tag) return std::nullopt;
  std::array<std::int64_t, count> out{};
  for (std::size_t i = 0; i < count; ++i) {
    const std::optional<std::int64_t> n = integer_at(value, 1 + 8 * i);
    if (!n) return std::nullopt;
    out[i] = *n;
  }
  return out;
}

std::string packed(char tag, std::initializer_list<std::int64_t> values) {
  std::string out(1, tag);
  for (const std::int64_t value : values) append_double(out, static_cast<double>(value));
  return out;
}

// |count| · scale stays far inside int64, so the algorithms' products cannot overflow.
bool bounded(std::int64_t count, std::int64_t scale) {
  return static_cast<algorithm::Int128>(count < 0 ? -count : count) * scale < kExactInteger;
}

}  // namespace

std::optional<algorithm::TatState> decode_tat(std::string_view value) {
  if (value.empty()) return std::nullopt;
  const char last = value.back();
  if (last >= '0' && last <= '9') {
    std::int64_t tat = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), tat);
    if (error != std::errc{} || end != value.data() + value.size()) return std::nullopt;
    if (tat <= -kExactInteger || tat >= kExactInteger) return std::nullopt;
    return algorithm::TatState{.tat = tat, .fraction = 0};
  }
  const auto fields = tagged<2>(value, 't');
  if (!fields || (*fields)[1] < 0) return std::nullopt;
  return algorithm::TatState{.tat = (*fields)[0], .fraction = (*fields)[1]};
}

std::string encode_tat(const algorithm::TatState& state) {
  if (state.fraction == 0) return decimal(state.tat);
  return packed('t', {state.tat, state.fraction});
}

std::optional<algorithm::IntervalBucketState> decode_interval(std::string_view value,
                                                              Micros period) {
  const auto fields = tagged<2>(value, 'i');
  if (!fields || !bounded((*fields)[0], period)) return std::nullopt;
  return algorithm::IntervalBucketState{.tokens = (*fields)[0], .refilled_at = (*fields)[1]};
}

std::string encode_interval(const algorithm::IntervalBucketState& state) {
  return packed('i', {state.tokens, state.refilled_at});
}

std::optional<StoredFixedWindow> decode_fixed_window(std::string_view value) {
  if (const auto fields = tagged<3>(value, 'f')) {
    return StoredFixedWindow{.state = {.window_start = (*fields)[0], .count = (*fields)[1]},
                             .expires = (*fields)[2]};
  }
  if (const auto fields = tagged<2>(value, 'w')) {
    return StoredFixedWindow{.state = {.window_start = (*fields)[0], .count = (*fields)[1]},
                             .expires = 0};
  }
  return std::nullopt;
}

std::string encode_fixed_window(const algorithm::WindowState& state, Micros expires) {
  return packed('f', {state.window_start, state.count, expires});
}

std::optional<StoredSlidingWindow> decode_sliding_window(std::string_view value, Micros window) {
  StoredSlidingWindow out;
  if (const auto fields = tagged<4>(value, 's')) {
    out = {.state = {(*fields)[0], (*fields)[1], (*fields)[2]}, .expires = (*fields)[3]};
  } else if (const auto old = tagged<3>(value, 's')) {
    out = {.state = {(*old)[0], (*old)[1], (*old)[2]}, .expires = 0};
  } else {
    return std::nullopt;
  }
  if (!bounded(out.state.current, window) || !bounded(out.state.previous, window)) {
    return std::nullopt;
  }
  return out;
}

std::string encode_sliding_window(const algorithm::SlidingWindowState& state, Micros expires) {
  return packed('s', {state.window_start, state.current, state.previous, expires});
}

std::optional<StoredCalendarWindow> decode_calendar_window(std::string_view value) {
  const auto fields = tagged<2>(value, 'c');
  if (!fields) return std::nullopt;
  return StoredCalendarWindow{.window_end = (*fields)[0], .counted = (*fields)[1]};
}

std::string encode_calendar_window(const StoredCalendarWindow& window) {
  return packed('c', {window.window_end, window.counted});
}

std::optional<algorithm::PenaltyState> decode_penalty(std::string_view value) {
  if (value.size() < 17 || (value.size() - 17) % 8 != 0 || value[0] != 'p') return std::nullopt;
  const std::optional<std::int64_t> blocked_until = integer_at(value, 1);
  const std::optional<std::int64_t> blocks = integer_at(value, 9);
  // The scripts cap blocks at 64: a larger count would only make the escalation loop longer.
  if (!blocked_until || !blocks || *blocks < 0 || *blocks > 64) return std::nullopt;
  algorithm::PenaltyState state{.blocked_until = *blocked_until, .blocks = *blocks};
  for (std::size_t at = 17; at < value.size(); at += 8) {
    const std::optional<std::int64_t> strike = integer_at(value, at);
    if (!strike) return std::nullopt;
    state.strikes.push_back(*strike);
  }
  return state;
}

std::string encode_penalty(const algorithm::PenaltyState& state) {
  std::string out = packed('p', {state.blocked_until, state.blocks});
  for (const Micros strike : state.strikes) append_double(out, static_cast<double>(strike));
  return out;
}

std::optional<StoredLease> decode_lease(std::string_view value) {
  if (value.size() != 16) return std::nullopt;
  const std::optional<std::int64_t> expires_at = integer_at(value, 0);
  const std::optional<std::int64_t> cost = integer_at(value, 8);
  // A lease holds at most one request's cost: a sum over 100 000 leases stays in int64.
  if (!expires_at || !cost || *cost < 0 || *cost > algorithm::kMaxCost) return std::nullopt;
  return StoredLease{.expires_at = *expires_at, .cost = *cost};
}

std::string encode_lease(const StoredLease& lease) {
  std::string out;
  append_double(out, static_cast<double>(lease.expires_at));
  append_double(out, static_cast<double>(lease.cost));
  return out;
}

long long ttl_millis(Micros micros) {
  return std::max<long long>(1, algorithm::ceil_div(micros, 1000));
}

std::string decimal(std::int64_t n) {
  char buffer[24];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, n);
  return std::string(buffer, end);
}

}  // namespace sluice::redis_module
