// Limits in words, for people reading `sluice policy list`: "token_bucket: 5 at once, refilled
// 2 per 1s (smooth)". The words carry every parameter that changes what a limit admits; the
// document (limit_to_json) stays the exact form that programs read. The words are the algorithm
// catalogue's (algorithm::limit_words).
#pragma once

#include <string>
#include <vector>

#include "sluice/algorithm/limit.h"

namespace sluice::policy {

// "<algorithm>: <what it admits>" on one line, durations spelled as in documents ("1s", "5m"):
//   token_bucket    "5 at once, refilled 2 per 1s (smooth)",
//                   "10 at once, refilled 10 every 1m all at once (interval)",
//                   with `initial` below capacity: "..., new subjects start with 0"
//   gcra            "10 per 1s, up to 6 at once (burst 5)"
//   leaky_bucket    "10 per 1s paced evenly, waiting up to 500ms" (max_delay 0: "no waiting")
//   fixed_window    "100 per 1h"
//   sliding_window  "100 in any 1h (estimated)"
//   sliding_log     "100 in any 1h (exact)"
//   concurrency     "3 at once, lease 30s"
std::string describe_limit(const algorithm::Limit& limit);

// Each limit described, joined by "; " (a request must pass them all).
std::string describe_limits(const std::vector<algorithm::Limit>& limits);

}  // namespace sluice::policy
