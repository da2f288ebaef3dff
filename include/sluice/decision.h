// Decision: the answer to "may this caller do this now?" (DESIGN.md §2, §5a), the one result type
// that travels from a store to the wire and to the library's callers (public API). A store fills
// the deciding limit's verdict, which limit decided and the lease it took; the decision service
// (service::Limiter) adds which policy and mode decided and whether a failure mode or shadow mode
// shaped the answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "sluice/verdict.h"

namespace sluice {

// enforce: denials are denials. shadow: always allow, but report and count would-be denials.
enum class Mode : std::uint8_t { kEnforce, kShadow };

struct Decision {
  algorithm::Verdict verdict;
  std::size_t limit_index = 0;
  // Set when an allowed request with cost > 0 took a lease in the policy's concurrency limits;
  // release or renew it with this id.
  std::optional<std::string> lease;
  // Set when a reserve (usage quotas, docs/quotas.md) recorded a reservation: settle it with this
  // id and the actual cost before its TTL passes.
  std::optional<std::string> reservation;
  // Filled by the decision service.
  std::string policy;
  Mode mode = Mode::kEnforce;
  bool degraded = false;  // decided by the failure mode because the store was unreachable
  // Shadow mode only: the policy would have denied this request; it was allowed anyway.
  bool shadow_denied = false;
};

}  // namespace sluice
