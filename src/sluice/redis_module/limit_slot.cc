#include "sluice/redis_module/limit_slot.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "sluice/algorithm/arithmetic.h"
#include "sluice/algorithm/evaluate.h"
#include "sluice/algorithm/tat.h"
#include "sluice/algorithm/window.h"
#include "sluice/redis_module/key_io.h"

namespace sluice::redis_module {
namespace {

using algorithm::ScriptKind;

// A sorted-set score as Redis prints it, when it is an integer below 2^53 (every score the
// scripts write is an instant in µs).
std::optional<Micros> score_of(std::string_view text) {
  const std::string copy(text);  // strtod needs a terminated string
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !(std::fabs(value) < 0x1p53) ||
      value != std::trunc(value)) {
    return std::nullopt;
  }
  return static_cast<Micros>(value);
}

// Members and ids per RedisModule_Call, as the scripts batch ZADD and HDEL (Lua's unpack is
// bounded by its C stack; here it bounds one call's argument vector).
constexpr std::size_t kBatch = 1000;

}  // namespace

LimitSlot::LimitSlot(RedisModuleCtx* ctx, const RequestLimit& limit, RedisModuleString* key,
                     Micros now, std::int64_t cost, bool keep_open)
    : ctx_(ctx), limit_(limit), key_(key), string_key_(ctx, key, keep_open), now_(now) {
  switch (limit.kind) {
    case ScriptKind::kSmoothBucket:
    case ScriptKind::kLeakyBucket: {
      // tat.lua: absent, unreadable, or full again (expired) by now: a new state.
      const std::optional<std::string_view> value = string_key_.read();
      std::optional<algorithm::TatState> stored = value ? decode_tat(*value) : std::nullopt;
      state_ = stored && algorithm::tat_ceil(*stored) > now
                   ? algorithm::LimitState(*stored)
                   : algorithm::initial_state(limit.limit, now);
      break;
    }
    case ScriptKind::kIntervalBucket: {
      // interval_state.lua: expired once full again (interval_full_at <= now).
      const auto& bucket = std::get<algorithm::TokenBucket>(limit.limit);
      const std::optional<std::string_view> value = string_key_.read();
      const auto stored = value ? decode_interval(*value, bucket.period) : std::nullopt;
      state_ = algorithm::initial_state(limit.limit, now);
      if (stored && algorithm::expires_at(limit.limit, *stored) > now) state_ = *stored;
      break;
    }
    case ScriptKind::kFixedWindow: {
      // fixed_window_state.lua: a later window starts empty and its TTL is set again.
      const auto& window = std::get<algorithm::FixedWindow>(limit.limit);
      const std::optional<std::string_view> value = string_key_.read();
      const auto stored = value ? decode_fixed_window(*value) : std::nullopt;
      const Micros current = algorithm::floor_div(now, window.window) * window.window;
      if (stored && stored->state.window_start >= current) {
        state_ = stored->state;
        expires_ = stored->expires;
      } else {
        state_ = algorithm::initial_state(limit.limit, now);
      }
      break;
    }
    case ScriptKind::kSlidingWindow: {
      // sliding_window_state.lua: the counts roll forward in the algorithm; `expires` stays.
      const auto& window = std::get<algorithm::SlidingWindow>(limit.limit);
      const std::optional<std::string_view> value = string_key_.read();
      const auto stored = value ? decode_sliding_window(*value, window.window) : std::nullopt;
      state_ = stored ? algorithm::LimitState(stored->state)
                      : algorithm::initial_state(limit.limit, now);
      if (stored) expires_ = stored->expires;
      break;
    }
    case ScriptKind::kCalendarWindow: {
      // calendar_window.lua: Redis's clock picks one of the three windows the client sent.
      const CalendarRecord& record = limit.calendar;
      for (const Micros end : record.ends) {
        if (now < end) {
          calendar_ = {.window_end = end, .counted = 0};
          has_window_ = true;
          break;
        }
      }
      if (!has_window_) break;
      const std::optional<std::string_view> value = string_key_.read();
      const auto stored = value ? decode_calendar_window(*value) : std::nullopt;
      // The same window, or a later one kept while the clock stepped back.
      if (stored && stored->window_end >= calendar_.window_end) calendar_ = *stored;
      break;
    }
    case ScriptKind::kSlidingLog:
      read_sliding_log(cost);
      break;
    case ScriptKind::kConcurrency:
      read_leases();
      break;
  }
}

void LimitSlot::read_sliding_log(std::int64_t cost) {
  // sliding_log.lua's reads: the newest entry tells whether any is live; the live ones are the
  // entries in (at - window, +inf], at = max(now, newest), each one unit. The algorithm needs
  // their count and the newest, and, for a denial it can retry, when the excess-th oldest unit
  // leaves the window: the log is given to it as that unit (with the older ones merged into it)
  // and the newest (with the rest), which it decides on exactly as on every entry, reading no
  // more than the script reads.
  const auto& log = std::get<algorithm::SlidingLog>(limit_.limit);
  algorithm::SlidingLogState state;
  const CallReply last(api.Call(ctx_, "ZRANGE", "sccc", key_, "-1", "-1", "WITHSCORES"));
  foreign_ = !last.ok();
  const std::optional<Micros> newest =
      last.size() == 2 ? score_of(last.string_at(1)) : std::nullopt;
  newest_ = newest;
  if (newest && *newest + log.window > now_) {
    const Micros at = std::max(now_, *newest);
    const std::string after = "(" + decimal(at - log.window);
    const long long used =
        CallReply(api.Call(ctx_, "ZCOUNT", "scc", key_, after.c_str(), "+inf")).integer();
    const long long excess = used + cost - log.limit;
    if (excess > 0 && cost <= log.limit) {
      const std::string skip = decimal(excess - 1);
      const CallReply entry(api.Call(ctx_, "ZRANGEBYSCORE", "scccccc", key_, after.c_str(), "+inf",
                                     "WITHSCORES", "LIMIT", skip.c_str(), "1"));
      const std::optional<Micros> excess_at =
          entry.size() == 2 ? score_of(entry.string_at(1)) : std::nullopt;
      if (excess_at) state.entries.push_back({.at = *excess_at, .cost = excess});
    }
    const std::int64_t merged = state.entries.empty() ? 0 : state.entries.back().cost;
    if (used > merged) state.entries.push_back({.at = *newest, .cost = used - merged});
  }
  state_ = std::move(state);
}

void LimitSlot::read_leases() {
  // concurrency.lua: every field is a lease; a value of another shape counts as expired.
  algorithm::ConcurrencyState state;
  const CallReply leases(api.Call(ctx_, "HGETALL", "s", key_));
  foreign_ = !leases.ok();
  for (std::size_t i = 0; i + 1 < leases.size(); i += 2) {
    const std::optional<StoredLease> lease = decode_lease(leases.string_at(i + 1));
    const Micros expires_at = lease ? lease->expires_at : 0;
    if (expires_at <= now_) {
      expired_.emplace_back(leases.string_at(i));
      continue;
    }
    state.leases.push_back(
        {.id = std::string(leases.string_at(i)), .expires_at = expires_at, .cost = lease->cost});
  }
  state_ = std::move(state);
}

algorithm::Verdict LimitSlot::decide(std::int64_t cost) const {
  if (limit_.kind != ScriptKind::kCalendarWindow) {
    return algorithm::decide_limit(limit_.limit, state_, cost, now_);
  }
  if (!has_window_) return {.limit = limit_.calendar.limit};  // denied, never retried
  return algorithm::decide_window_count(limit_.calendar.limit, calendar_.counted,
                                        calendar_.window_end, cost, now_);
}

void LimitSlot::commit(std::int64_t cost, std::string_view lease) {
  if (limit_.kind == ScriptKind::kCalendarWindow) {
    calendar_.counted += cost;
    string_key_.write(encode_calendar_window(calendar_), ttl_millis(calendar_.window_end - now_));
    return;
  }
  algorithm::commit_limit(limit_.limit, state_, cost, now_, lease);
  // The key lives until the state is as good as new (the scripts' ttl).
  const Micros ttl = algorithm::expires_at(limit_.limit, state_) - now_;
  switch (limit_.kind) {
    case ScriptKind::kSmoothBucket:
    case ScriptKind::kLeakyBucket:
      string_key_.write(encode_tat(std::get<algorithm::TatState>(state_)), ttl_millis(ttl));
      break;
    case ScriptKind::kIntervalBucket:
      string_key_.write(encode_interval(std::get<algorithm::IntervalBucketState>(state_)),
                        ttl_millis(ttl));
      break;
    case ScriptKind::kFixedWindow:
      write_fixed_window(now_ + ttl);
      break;
    case ScriptKind::kSlidingWindow: {
      const Micros reset = std::max<Micros>(0, ttl);
      std::optional<long long> ttl_ms;
      if (expires_ < now_ + reset) {
        ttl_ms = ttl_millis(reset);
        expires_ = now_ + reset;
      }
      string_key_.write(
          encode_sliding_window(std::get<algorithm::SlidingWindowState>(state_), expires_), ttl_ms);
      break;
    }
    case ScriptKind::kSlidingLog:
      write_sliding_log(cost);
      break;
    case ScriptKind::kConcurrency:
      write_leases(lease, cost);
      break;
    case ScriptKind::kCalendarWindow:
      break;  // written above
  }
}

void LimitSlot::commit_denied(std::int64_t cost) {
  if (limit_.kind != ScriptKind::kFixedWindow) return;
  if (!algorithm::commit_denied_limit(limit_.limit, state_, cost, now_)) return;
  write_fixed_window(algorithm::expires_at(limit_.limit, state_));
}

void LimitSlot::write_fixed_window(Micros window_end) {
  // The TTL is set once per window; later writes into it keep it (SET … KEEPTTL).
  std::optional<long long> ttl_ms;
  if (expires_ < window_end) {
    ttl_ms = ttl_millis(window_end - now_);
    expires_ = window_end;
  }
  string_key_.write(encode_fixed_window(std::get<algorithm::WindowState>(state_), expires_),
                    ttl_ms);
}

void LimitSlot::write_sliding_log(std::int64_t cost) {
  // sliding_log.lua's commit: drop what left the window, then one member "<at>:<n>" per unit,
  // numbered after the members already at that instant.
  const auto& log = std::get<algorithm::SlidingLog>(limit_.limit);
  const Micros at = std::get<algorithm::SlidingLogState>(state_).entries.back().at;
  if (foreign_) CallReply(api.Call(ctx_, "DEL", "!s", key_));
  // The script's ZREMRANGEBYSCORE and ZCOUNT, left out where they cannot find anything (an empty
  // or replaced log; no entry as late as `at`, the newest being earlier): a command that changes
  // nothing is not replicated either.
  if (newest_) {
    const std::string oldest = decimal(at - log.window);
    CallReply(api.Call(ctx_, "ZREMRANGEBYSCORE", "!scc", key_, "-inf", oldest.c_str()));
  }
  const std::string stamp = decimal(at);
  const long long taken =
      newest_ && *newest_ >= at
          ? CallReply(api.Call(ctx_, "ZCOUNT", "scc", key_, stamp.c_str(), stamp.c_str())).integer()
          : 0;
  StringArguments members(ctx_);
  for (std::int64_t n = taken + 1; n <= taken + cost; ++n) {
    members.add(stamp);
    members.add(stamp + ":" + decimal(n));
    if (members.size() == 2 * kBatch || n == taken + cost) {
      CallReply(api.Call(ctx_, "ZADD", "!sv", key_, members.data(), members.size()));
      members.clear();
    }
  }
  const std::string ttl = decimal(ttl_millis(at + log.window - now_));
  CallReply(api.Call(ctx_, "PEXPIRE", "!sc", key_, ttl.c_str()));
}

void LimitSlot::write_leases(std::string_view lease, std::int64_t cost) {
  // concurrency.lua's commit: expired leases removed, this one set, the key kept as long as its
  // longest lease.
  const auto& concurrency = std::get<algorithm::Concurrency>(limit_.limit);
  if (foreign_) CallReply(api.Call(ctx_, "DEL", "!s", key_));
  StringArguments ids(ctx_);
  for (std::size_t i = 0; i < expired_.size(); ++i) {
    ids.add(expired_[i]);
    if (ids.size() == kBatch || i + 1 == expired_.size()) {
      CallReply(api.Call(ctx_, "HDEL", "!sv", key_, ids.data(), ids.size()));
      ids.clear();
    }
  }
  const std::string value =
      encode_lease({.expires_at = now_ + concurrency.lease_ttl, .cost = cost});
  CallReply(
      api.Call(ctx_, "HSET", "!sbb", key_, lease.data(), lease.size(), value.data(), value.size()));
  const Micros latest = algorithm::expires_at(limit_.limit, state_);
  const std::string ttl = decimal(ttl_millis(latest - now_));
  CallReply(api.Call(ctx_, "PEXPIRE", "!sc", key_, ttl.c_str()));
}

}  // namespace sluice::redis_module
