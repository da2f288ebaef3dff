#include "sluice/wire/rls_mapping.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"

namespace sluice::wire {
namespace {

std::uint32_t clamp_u32(std::int64_t value) {
  return static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(value, 0, std::numeric_limits<std::uint32_t>::max()));
}

RlsUnit unit_for(Micros length) {
  switch (length) {
    case kMicrosPerSecond:
      return RlsUnit::kSecond;
    case kMicrosPerMinute:
      return RlsUnit::kMinute;
    case kMicrosPerHour:
      return RlsUnit::kHour;
    case kMicrosPerDay:
      return RlsUnit::kDay;
    case 7 * kMicrosPerDay:
      return RlsUnit::kWeek;
    // envoyproxy/ratelimit's MONTH and YEAR dividers, which `policy import` writes.
    case 30 * kMicrosPerDay:
      return RlsUnit::kMonth;
    case 365 * kMicrosPerDay:
      return RlsUnit::kYear;
    default:
      return RlsUnit::kUnknown;
  }
}

}  // namespace

StatusOr<algorithm::Limit> override_limit(std::uint32_t requests_per_unit, int unit) {
  static constexpr Micros kWindows[] = {0,
                                        kMicrosPerSecond,
                                        kMicrosPerMinute,
                                        kMicrosPerHour,
                                        kMicrosPerDay,
                                        30 * kMicrosPerDay,
                                        365 * kMicrosPerDay,
                                        7 * kMicrosPerDay};
  if (requests_per_unit == 0) {
    return invalid_argument("limit.requests_per_unit: must be at least 1");
  }
  if (unit <= 0 || unit >= static_cast<int>(std::size(kWindows))) {
    return invalid_argument("limit.unit: must be SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR");
  }
  return algorithm::Limit(
      algorithm::FixedWindow{.limit = requests_per_unit, .window = kWindows[unit]});
}

std::string override_subject(std::string_view subject, std::uint32_t requests_per_unit, int unit) {
  // The descriptor subject has one '|' fewer than its entries per path; this adds one.
  return std::string(subject) + "|override:" + std::to_string(requests_per_unit) + "/" +
         std::to_string(unit);
}

StatusOr<RlsHeaders> parse_rls_headers(std::string_view text) {
  if (text == "none") return RlsHeaders::kNone;
  if (text == "x-ratelimit") return RlsHeaders::kXRateLimit;
  if (text == "ratelimit") return RlsHeaders::kRateLimit;
  return invalid_argument("must be none, x-ratelimit or ratelimit, not \"" + std::string(text) +
                          "\"");
}

std::string_view rls_headers_name(RlsHeaders headers) {
  switch (headers) {
    case RlsHeaders::kXRateLimit:
      return "x-ratelimit";
    case RlsHeaders::kRateLimit:
      return "ratelimit";
    case RlsHeaders::kNone:
      break;
  }
  return "none";
}

StatusOr<std::int64_t> descriptor_cost(std::uint32_t request_hits_addend,
                                       std::optional<std::uint64_t> descriptor_hits_addend) {
  if (descriptor_hits_addend) {
    if (*descriptor_hits_addend > static_cast<std::uint64_t>(algorithm::kMaxCost)) {
      return invalid_argument("hits_addend: must be at most " +
                              std::to_string(algorithm::kMaxCost));
    }
    return static_cast<std::int64_t>(*descriptor_hits_addend);
  }
  if (request_hits_addend == 0) return 1;
  if (request_hits_addend > algorithm::kMaxCost) {
    return invalid_argument("hits_addend: must be at most " + std::to_string(algorithm::kMaxCost));
  }
  return static_cast<std::int64_t>(request_hits_addend);
}

RlsStatus status_from_decision(const service::Decision& decision, const policy::Policy& policy) {
  const bool as_envoy =
      policy.descriptors && policy.descriptors->answers == policy::DescriptorAnswers::kEnvoy;
  RlsStatus status{.code = decision.verdict.allowed ? RlsCode::kOk : RlsCode::kOverLimit,
                   .limit_remaining = clamp_u32(decision.verdict.remaining),
                   .duration_until_reset = decision.verdict.reset_after};
  if (policy.limits.empty()) {  // unlimited: no current limit
    // envoyproxy/ratelimit tells an unlimited descriptor from an unmatched one this way.
    if (as_envoy) status.limit_remaining = std::numeric_limits<std::uint32_t>::max();
    return status;
  }
  if (as_envoy) {
    // envoyproxy/ratelimit sends whole seconds, the unit's length less the seconds elapsed in it:
    // the time to the window's end rounded up.
    status.duration_until_reset =
        (status.duration_until_reset + kMicrosPerSecond - 1) / kMicrosPerSecond * kMicrosPerSecond;
  }
  const algorithm::Limit& limit =
      policy.limits[std::min(decision.limit_index, policy.limits.size() - 1)];
  status.current_limit = RlsLimit{.name = as_envoy ? policy.descriptors->limit_name : policy.name,
                                  .requests_per_unit = clamp_u32(decision.verdict.limit),
                                  .unit = unit_for(algorithm::unit_length(limit))};
  return status;
}

std::vector<Header> response_headers(const std::vector<RlsStatus>& statuses, RlsHeaders style) {
  if (style == RlsHeaders::kNone) return {};
  // As envoyproxy/ratelimit picks it: the last over-limit status, else the first with the
  // fewest remaining.
  const RlsStatus* tightest = nullptr;
  for (const RlsStatus& status : statuses) {
    if (!status.current_limit) continue;
    if (status.code == RlsCode::kOverLimit) {
      tightest = &status;
    } else if (tightest == nullptr || (tightest->code != RlsCode::kOverLimit &&
                                       status.limit_remaining < tightest->limit_remaining)) {
      tightest = &status;
    }
  }
  if (tightest == nullptr) return {};
  const std::string limit = std::to_string(tightest->current_limit->requests_per_unit);
  const std::string remaining = std::to_string(tightest->limit_remaining);
  // Whole seconds rounded up: a client waiting that long finds the window reset.
  const std::string reset =
      std::to_string((tightest->duration_until_reset + kMicrosPerSecond - 1) / kMicrosPerSecond);
  if (style == RlsHeaders::kRateLimit) {
    return {
        {"RateLimit-Limit", limit}, {"RateLimit-Remaining", remaining}, {"RateLimit-Reset", reset}};
  }
  std::string quota = limit;
  static constexpr std::pair<RlsUnit, std::int64_t> kSeconds[] = {
      {RlsUnit::kSecond, 1},        {RlsUnit::kMinute, 60},      {RlsUnit::kHour, 3600},
      {RlsUnit::kDay, 86400},       {RlsUnit::kWeek, 7 * 86400}, {RlsUnit::kMonth, 30 * 86400},
      {RlsUnit::kYear, 365 * 86400}};
  for (const auto& [unit, seconds] : kSeconds) {
    if (unit == tightest->current_limit->unit) {
      quota += ", " + limit + ";w=" + std::to_string(seconds);
    }
  }
  return {{"x-ratelimit-limit", quota},
          {"x-ratelimit-remaining", remaining},
          {"x-ratelimit-reset", reset}};
}

}  // namespace sluice::wire
