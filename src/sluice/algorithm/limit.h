// The parameters of every rate-limit algorithm (DESIGN.md §2, §5a), one struct each, and `Limit`,
// the variant a policy holds one of per limit. Plain values: validation lives in validate.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>

#include "sluice/algorithm/calendar.h"
#include "sluice/time.h"

namespace sluice::algorithm {

enum class RefillMode { kSmooth, kInterval };

// Starts full (or at `initial`); smooth: grows continuously at refill/period; interval: `refill`
// tokens at once per full period since the last refill. Capped at `capacity`.
struct TokenBucket {
  std::int64_t capacity = 0;
  std::int64_t refill = 0;
  Micros period = 0;
  RefillMode refill_mode = RefillMode::kSmooth;
  std::optional<std::int64_t> initial;  // tokens a subject without state starts with; default full
};

// Generic Cell Rate Algorithm, redis-cell semantics: `rate` per `period`, `burst` extra cells;
// admits like a smooth token bucket with capacity burst + 1.
struct Gcra {
  std::int64_t rate = 0;
  Micros period = 0;
  std::int64_t burst = 0;
};

// Pacing: requests are scheduled one emission interval (period/rate per unit) apart and admitted
// when their scheduled start is at most `max_delay` away; the caller is told how long to wait.
struct LeakyBucket {
  std::int64_t rate = 0;
  Micros period = 0;
  Micros max_delay = 0;
};

// What a denied request takes from a fixed window: nothing (Sluice's rule: a denial charges
// nothing), or its cost all the same, as envoyproxy/ratelimit counts every hit unless its
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT is set (docs/envoy.md "Counting denied hits").
enum class DeniedCost : std::uint8_t { kFree, kCounted };

// At most `limit` units per window aligned to the epoch, or, with `calendar`, per calendar period
// in a time zone (calendar.h); `window` is then the longest such period (what validation bounds
// products and horizons with). With DeniedCost::kCounted a denial is counted too, so the window
// stays over once it is over, and `limit` may be 0 (every request with a cost is denied).
struct FixedWindow {
  std::int64_t limit = 0;
  Micros window = 0;
  std::optional<Calendar> calendar;
  DeniedCost denied_cost = DeniedCost::kFree;
};

// Cloudflare's estimate: previous window weighted by its overlap plus the current window.
struct SlidingWindow {
  std::int64_t limit = 0;
  Micros window = 0;
};

// Exact: admitted units in (now - window, now] never exceed `limit`; one entry per request.
struct SlidingLog {
  std::int64_t limit = 0;
  Micros window = 0;
};

// At most `limit` units held by live leases; a lease not renewed dies after `lease_ttl`.
struct Concurrency {
  std::int64_t limit = 0;
  Micros lease_ttl = 0;
};

using Limit = std::variant<TokenBucket, Gcra, LeakyBucket, FixedWindow, SlidingWindow, SlidingLog,
                           Concurrency>;

// "token_bucket", "gcra", ... as written in policy documents (the catalogue's row name,
// catalogue.h).
std::string_view algorithm_name(const Limit& limit);

}  // namespace sluice::algorithm
