// One limit of one decision inside SLUICE.EVALUATE: its key's state read into the algorithm's
// state (as the kind's Lua block reads it), the algorithm's own verdict on it, and, when the
// decision admits, the state charged by the algorithm and written back as the Lua block writes
// it (same value, same TTL; sorted set and hash kinds through the same commands).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/state.h"
#include "sluice/redis_module/key_io.h"
#include "sluice/redis_module/redis_module_api.h"
#include "sluice/redis_module/request.h"
#include "sluice/redis_module/stored_values.h"
#include "sluice/verdict.h"

namespace sluice::redis_module {

class LimitSlot {
 public:
  // Reads `key`'s state for `limit` at `now`, for deciding `cost` (the sliding log reads only
  // what that decision needs). `keep_open`: no other key of the decision has this name
  // (key_io.h StringKey).
  LimitSlot(RedisModuleCtx* ctx, const RequestLimit& limit, RedisModuleString* key, Micros now,
            std::int64_t cost, bool keep_open);

  // The limit's own verdict on `cost` (the algorithm's decide): written nowhere.
  algorithm::Verdict decide(std::int64_t cost) const;

  // Charges `cost` (the algorithm's commit; a concurrency limit records `lease`) and writes the
  // key. Precondition: decide(cost) allowed and cost > 0.
  void commit(std::int64_t cost, std::string_view lease);

  // An acquire of `cost` this limit denied itself: a fixed window counting denials counts it and
  // writes the key at once (fixed_window.lua); every other limit is left as it is.
  void commit_denied(std::int64_t cost);

 private:
  void read_sliding_log(std::int64_t cost);
  void read_leases();
  void write_fixed_window(Micros window_end);
  void write_sliding_log(std::int64_t cost);
  void write_leases(std::string_view lease, std::int64_t cost);

  RedisModuleCtx* ctx_;
  const RequestLimit& limit_;
  RedisModuleString* key_;
  StringKey string_key_;  // the key of the kinds stored as strings
  Micros now_;
  algorithm::LimitState state_;       // every kind but the calendar window
  StoredCalendarWindow calendar_;     // the calendar window: the window holding now
  bool has_window_ = false;           // the calendar window: false when now is past all three
  Micros expires_ = 0;                // fixed and sliding windows: where the TTL runs to
  bool foreign_ = false;              // sliding log, concurrency: a key of another type
  std::optional<Micros> newest_;      // sliding log: its newest entry's instant, if any
  std::vector<std::string> expired_;  // concurrency: lease ids no longer live (or unreadable)
};

}  // namespace sluice::redis_module
