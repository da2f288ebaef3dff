// Rate-limit response headers for a decision (DESIGN.md §5a), as pure functions:
//   github  X-RateLimit-Limit / -Remaining / -Reset (Unix seconds; GitHub, seed 002)
//   draft6  RateLimit-Limit / -Remaining / -Reset (delta seconds; IETF drafts ≤ 06, Kong, Envoy)
//   draft10 RateLimit-Policy: "<item>";q=<quota>;w=<window s> and RateLimit: "<item>";r=..;t=..
//           (IETF httpapi draft 10 structured fields)
// and Retry-After for 429s. Which sets are emitted is configurable.
//
// One "reset" instant feeds every set: for a denial that can be retried it is `retry_after`
// (when the same request would be allowed), otherwise `reset_after` (when the limit is back to
// unused). Seconds are always rounded up, so a client that waits them is never early.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/service/decision.h"
#include "sluice/status.h"
#include "sluice/wire/header.h"

namespace sluice::wire {

struct HeaderSets {
  bool github = true;
  bool draft6 = true;
  bool draft10 = true;
};

// "all", "none", or a comma-separated subset of "github", "draft6", "draft10".
// InvalidArgument naming the unknown word.
StatusOr<HeaderSets> parse_header_sets(std::string_view text);
std::string format_header_sets(const HeaderSets& sets);

// What RateLimit-Policy says about one limit: q (quota units), w (window in whole seconds,
// rounded up; absent when the limit has none, e.g. concurrency) and qu (quota unit, absent for
// the default "requests").
struct QuotaPolicy {
  std::int64_t quota = 0;
  std::optional<std::int64_t> window_seconds;
  std::optional<std::string_view> unit;
};
// q = the size every verdict reports (algorithm::nominal_size), w = algorithm::quota_window in
// whole seconds (token_bucket: the time to refill from empty; a calendar window and concurrency:
// none), qu = the catalogue row's quota unit (concurrency: "concurrent-requests").
QuotaPolicy quota_policy(const algorithm::Limit& limit);

// The policy item name for limit `index` of a policy with `count` limits: the policy's name for
// limit 0, "<policy>/<index>" for the others.
std::string policy_item_name(std::string_view policy, std::size_t index);

// Microseconds to whole seconds, rounded up (negative counts as 0).
std::int64_t ceil_seconds(Micros duration);

// The "reset" delay described above.
Micros reset_delay(const service::Decision& decision);

// The headers for `decision` made at `now` (Unix µs) under a policy with `limits`. Empty when
// the decision carries no limit (a disabled policy).
std::vector<Header> rate_limit_headers(const service::Decision& decision,
                                       std::span<const algorithm::Limit> limits, Micros now,
                                       const HeaderSets& sets);

// Retry-After for a denial, in seconds: ceil(retry_after), never less than 1 nor than the
// RateLimit `t`. nullopt when the request can never be granted (no retry_after) or is allowed.
std::optional<std::int64_t> retry_after_seconds(const service::Decision& decision);

// Retry-After spread by the policy's retry_jitter (`percent`, 0..100), so callers denied at one
// instant do not all retry at the same second: a whole number of seconds drawn uniformly by
// `draw` (in [0, 1)) from [retry_after_seconds, ceil(retry_after · (1 + percent/100))]. Never
// earlier than the exact retry time; percent 0 is retry_after_seconds.
std::optional<std::int64_t> jittered_retry_after_seconds(const service::Decision& decision,
                                                         std::int64_t percent, double draw);

}  // namespace sluice::wire
