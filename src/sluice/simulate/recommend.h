// Recommendations (docs/backtesting.md, "Recommending limits"): for each limit of a policy, the
// tightest value of its size parameter that keeps the denied share of the recorded traffic at or
// below a target, found by replaying the traffic against candidates, with the curve searched.
//
// The size parameter: the first count of the algorithm's catalogue row — `limit` for
// fixed_window, sliding_window and sliding_log; `rate` for gcra and leaky_bucket; `capacity` for
// token_bucket (its burst: the refill rate is kept). Every other parameter, and every other limit
// of the policy, stays as written. Calendar windows are not tuned yet.
//
// The search assumes the denied share does not grow when the parameter grows. It holds for one
// limit alone; with several limits, admitting more under one can make another deny more, which
// the printed curve shows. The answer is the smallest value whose share met the target.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/simulate/replay.h"
#include "sluice/simulate/traffic_stream.h"
#include "sluice/status.h"

namespace sluice::simulate {

// What the target bounds: the share of subjects denied at least once, or of requests denied.
enum class ShareOf : std::uint8_t { kSubjects, kRequests };

struct Target {
  ShareOf of = ShareOf::kSubjects;
  double share = 0.01;  // 0 to 1
};

// "subjects=1%" or "requests=0.1%" (a percentage from 0 to 100). InvalidArgument naming the
// flag's part that is wrong.
StatusOr<Target> parse_target(std::string_view text);

struct CurvePoint {
  std::int64_t value = 0;
  std::uint64_t denied = 0;  // subjects or requests, as the target counts
  std::uint64_t total = 0;
  double share() const {
    return total == 0 ? 0 : static_cast<double>(denied) / static_cast<double>(total);
  }
};

struct LimitRecommendation {
  std::size_t limit_index = 0;
  std::string algorithm;
  std::string parameter;  // "limit", "rate" or "capacity"
  std::int64_t current = 0;
  // Absent when no valid value up to the search's bound met the target.
  std::optional<std::int64_t> recommended;
  // No recommendation because the share stopped falling as the value doubled (recommend.cc
  // kPlateau): the policy's other limits or this limit's other parameters deny the rest.
  bool plateau = false;
  // Set when this limit was not searched, saying why (a calendar window).
  std::string note;
  std::vector<CurvePoint> curve;  // every value replayed, ascending
};

// One replay of the traffic: hands every event, in time order, to the sink.
using TrafficPass = std::function<Status(const EventSink&)>;

struct RecommendOptions {
  // Candidates replayed together in one pass over the traffic.
  std::size_t candidates_per_pass = 16;
  // The largest value tried: a target unmet by then has no recommendation.
  std::int64_t max_value = std::int64_t{1} << 40;
};

// Errors: the pass's; check_replayable's for the policy.
StatusOr<std::vector<LimitRecommendation>> recommend(const policy::Policy& policy,
                                                     const Target& target, TrafficNames& names,
                                                     const TrafficPass& pass,
                                                     const RecommendOptions& options = {});

}  // namespace sluice::simulate
