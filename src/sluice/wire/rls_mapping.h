// The Envoy Rate Limit Service mapping (docs/envoy.md), free of gRPC and protobuf so it is pure
// and cheap to test: a descriptor's cost from the hits_addend fields, a Decision as an RLS
// DescriptorStatus, and the response headers of a whole answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/policy/policy.h"
#include "sluice/service/decision.h"
#include "sluice/status.h"
#include "sluice/wire/header.h"

namespace sluice::wire {

// RateLimitResponse.Code and RateLimit.Unit, with the wire's numbers.
enum class RlsCode : int { kUnknown = 0, kOk = 1, kOverLimit = 2 };
enum class RlsUnit : int {
  kUnknown = 0,
  kSecond = 1,
  kMinute = 2,
  kHour = 3,
  kDay = 4,
  kMonth = 5,
  kYear = 6,
  kWeek = 7
};

struct RlsLimit {
  std::string name;  // the policy's name (kEnvoy answers: descriptors.limit_name)
  std::uint32_t requests_per_unit = 0;
  RlsUnit unit = RlsUnit::kUnknown;
};

// One DescriptorStatus.
struct RlsStatus {
  RlsCode code = RlsCode::kOk;
  std::optional<RlsLimit> current_limit;  // absent: unmatched or unlimited
  std::uint32_t limit_remaining = 0;
  Micros duration_until_reset = 0;
};

// Which response_headers_to_add an answer carries (docs/envoy.md "Headers").
enum class RlsHeaders {
  kNone,        // envoyproxy/ratelimit's default
  kXRateLimit,  // x-ratelimit-limit "N, N;w=S", -remaining, -reset (Envoy's draft 03 names)
  kRateLimit,   // RateLimit-Limit, -Remaining, -Reset (envoyproxy/ratelimit's header names)
};
StatusOr<RlsHeaders> parse_rls_headers(std::string_view text);
std::string_view rls_headers_name(RlsHeaders headers);

// A descriptor's cost: its own hits_addend when set (0 is a peek), else the request's, where 0
// means 1 (the proto3 default). InvalidArgument above algorithm::kMaxCost.
StatusOr<std::int64_t> descriptor_cost(std::uint32_t request_hits_addend,
                                       std::optional<std::uint64_t> descriptor_hits_addend);

// A descriptor's RateLimitOverride as a limit: a fixed window of `requests_per_unit` per `unit`
// (MONTH and YEAR as 30 and 365 days, as envoyproxy/ratelimit counts them). InvalidArgument for
// 0 requests or an UNKNOWN or out-of-range unit.
StatusOr<algorithm::Limit> override_limit(std::uint32_t requests_per_unit, int unit);
// The subject an override is counted under: the descriptor's subject plus one more segment, so it
// never shares state with the policy's own limits nor with another override.
std::string override_subject(std::string_view subject, std::uint32_t requests_per_unit, int unit);

// The status of a matched descriptor decided by `policy`. Shadow decisions and failure-mode
// decisions arrive allowed and answer OK. The unit is the deciding limit's window or period when
// it is exactly one RateLimit unit, else UNKNOWN with the limit's own size. A policy whose
// descriptors answer as envoyproxy/ratelimit (DescriptorAnswers::kEnvoy) reports its limit's
// `limit_name`, whole seconds until the reset, and 4294967295 remaining when unlimited.
RlsStatus status_from_decision(const service::Decision& decision, const policy::Policy& policy);

// The headers of an answer: those of the last over-limit status with a current_limit, else of
// the first with the fewest remaining (as envoyproxy/ratelimit picks it), none when no status
// has a limit.
std::vector<Header> response_headers(const std::vector<RlsStatus>& statuses, RlsHeaders style);

}  // namespace sluice::wire
