// The string values the Lua scripts store, read into the algorithms' states and written back
// byte for byte as the scripts write them (store/redis/scripts/common.lua lists the encodings).
// Pure: no Redis here (stored_values_test.cc).
//
// A value of another shape decodes as nullopt, which the caller treats as absent, as the scripts
// do: a key left by another algorithm (a policy edited in place) starts over. The module also
// refuses, as absent, numbers the scripts never write (not integers below 2^53, counts so large
// that the C++ integer arithmetic could overflow, more than 64 blocks), where the scripts would
// compute on whatever they read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sluice/algorithm/penalty.h"
#include "sluice/algorithm/state.h"
#include "sluice/time.h"

namespace sluice::redis_module {

// gcra, smooth token_bucket and leaky_bucket: decimal "<tat>" when the fraction is 0 (told apart
// by its last byte, a digit), else 17 bytes '<c1dd' 't', tat, fraction.
std::optional<algorithm::TatState> decode_tat(std::string_view value);
std::string encode_tat(const algorithm::TatState& state);

// Interval token_bucket: 17 bytes '<c1dd' 'i', tokens, refilled_at. `period`: the limit's, which
// bounds how deep a debt the module computes with.
std::optional<algorithm::IntervalBucketState> decode_interval(std::string_view value,
                                                              Micros period);
std::string encode_interval(const algorithm::IntervalBucketState& state);

// Fixed window: 25 bytes '<c1ddd' 'f', window_start, count, expires (the instant its TTL was set
// to run to); 17 bytes '<c1dd' 'w' from earlier scripts, without `expires` (read as 0).
struct StoredFixedWindow {
  algorithm::WindowState state;
  Micros expires = 0;
};
std::optional<StoredFixedWindow> decode_fixed_window(std::string_view value);
std::string encode_fixed_window(const algorithm::WindowState& state, Micros expires);

// Sliding window: 33 bytes '<c1dddd' 's', window_start, current, previous, expires; 25 bytes
// without `expires` from earlier scripts. `window` bounds the counts (previous · window must fit).
struct StoredSlidingWindow {
  algorithm::SlidingWindowState state;
  Micros expires = 0;
};
std::optional<StoredSlidingWindow> decode_sliding_window(std::string_view value, Micros window);
std::string encode_sliding_window(const algorithm::SlidingWindowState& state, Micros expires);

// Calendar window: 17 bytes '<c1dd' 'c', window_end, counted.
struct StoredCalendarWindow {
  Micros window_end = 0;
  std::int64_t counted = 0;
};
std::optional<StoredCalendarWindow> decode_calendar_window(std::string_view value);
std::string encode_calendar_window(const StoredCalendarWindow& window);

// Penalty box: 'p', blocked_until, blocks ('<c1dd'), then one '<d' per strike, oldest first.
std::optional<algorithm::PenaltyState> decode_penalty(std::string_view value);
std::string encode_penalty(const algorithm::PenaltyState& state);

// A concurrency lease's hash value: 16 bytes '<dd' expires_at, cost. nullopt for another shape
// (the script counts such a lease as expired).
struct StoredLease {
  Micros expires_at = 0;
  std::int64_t cost = 0;
};
std::optional<StoredLease> decode_lease(std::string_view value);
std::string encode_lease(const StoredLease& lease);

// Whole milliseconds for a TTL of `micros`, rounded up, at least 1 (evaluate.lua).
long long ttl_millis(Micros micros);

// "<n>" as Lua's string.format('%d', n) writes it.
std::string decimal(std::int64_t n);

}  // namespace sluice::redis_module
