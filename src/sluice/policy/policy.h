// The policy model (DESIGN.md §4, §5a): a named rule set for one resource — the apps allowed to
// use it, its limits (all must pass), its mode and what to do when the store fails — plus the
// audit fields the repository maintains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/algorithm/penalty.h"
#include "sluice/decision.h"
#include "sluice/policy/descriptors.h"
#include "sluice/time.h"

namespace sluice::policy {

using Mode = sluice::Mode;  // sluice/decision.h

// What a decision does when the store cannot be reached.
// kSplit: while the store is unreachable, each node grants limit ÷ live nodes (the count its
// heartbeat last read, docs/defences.md "Budget-preserving outage mode").
enum class FailureMode { kFailOpen, kFailClosed, kLocal, kSplit };

inline constexpr Micros kDefaultLeasePeriod = 100 * kMicrosPerMilli;
inline constexpr Micros kMaxLeasePeriod = 60 * kMicrosPerSecond;
inline constexpr std::int64_t kMaxLeaseTokens = 1'000'000;

struct Policy {
  std::string name;  // [A-Za-z0-9._-]{1,128}
  std::string description;
  std::vector<std::string> apps;  // "*" admits any app
  Mode mode = Mode::kEnforce;
  FailureMode on_store_failure = FailureMode::kFailOpen;
  bool enabled = true;
  std::vector<algorithm::Limit> limits;  // empty only for an `unlimited` descriptor policy
  // How far below zero a charge after the fact may take each limit's balance, in cost units
  // (algorithm/quota.h, docs/quotas.md). 0: a charge never goes into debt.
  std::int64_t max_debt = 0;
  // Token leasing for hot subjects (service/token_batches.h, docs/defences.md): a node takes up to
  // this many units per store call and spends them locally for at most `lease_period`, giving
  // back what is unused. 0: off (every decision asks the store).
  std::int64_t lease_tokens = 0;
  Micros lease_period = kDefaultLeasePeriod;
  // The penalty box (algorithm/penalty.h, docs/quotas.md): absent, denials never block.
  std::optional<algorithm::Penalty> penalty;
  // Retry-After jitter in percent (0: none): the Retry-After header of a denial is spread over
  // [exact, exact × (1 + retry_jitter/100)] so that callers denied together do not retry together;
  // the decision itself (and the JSON body) keeps the exact retry time.
  std::int64_t retry_jitter_percent = 0;
  // Where Envoy's Rate Limit Service finds this policy (docs/envoy.md); absent: not reachable
  // through descriptors.
  std::optional<DescriptorSection> descriptors;
  // Defences (docs/defences.md; read and written by defence_fields.h). Staged rollout, mode
  // enforce only: the percentage (0 to 100) of subjects, chosen by a stable hash of policy and
  // subject, whose denials are enforced; the others are shadowed. Absent: every subject.
  std::optional<double> rollout;
  // The local over-limit cache: absent takes the default for the limits (over_limit_cache.h).
  std::optional<bool> over_limit_cache;

  // Maintained by the repository.
  std::int64_t version = 0;
  std::string created_by;
  std::string updated_by;
  Micros created_at = 0;
  Micros updated_at = 0;

  bool admits_app(std::string_view app) const;
};

std::string_view mode_name(Mode mode);
std::string_view failure_mode_name(FailureMode mode);

}  // namespace sluice::policy
