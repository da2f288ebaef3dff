// Staged rollout (docs/defences.md §5): a policy in mode enforce with `rollout: P%` enforces its
// denials for P % of subjects and shadows them for the rest. The subjects are chosen by a stable
// hash of (policy name, subject) — the same on every node, in every process and release — into
// one of a million buckets; a subject is enforced when its bucket is below P × 10 000. So the
// groups nest: raising P from 1 to 10 keeps every subject of the 1 % enforced.
#pragma once

#include <cstdint>
#include <string_view>

#include "sluice/policy/policy.h"
#include "sluice/service/decision.h"

namespace sluice::service {

inline constexpr std::uint32_t kRolloutBuckets = 1'000'000;

// The subject's bucket in [0, kRolloutBuckets) for the policy: FNV-1a 64 of name, NUL, subject.
std::uint32_t rollout_bucket(std::string_view policy, std::string_view subject);

// Whether the policy's denials are enforced for `subject`: mode enforce and, under a rollout,
// the subject's bucket within it. False for mode shadow.
bool enforced_for(const policy::Policy& policy, std::string_view subject);

// Decides `decision` (of `subject`) in the mode it gets: shadow outside a rollout's enforced
// share; and in shadow mode a denial is allowed and reported as shadow_denied.
void apply_mode(const policy::Policy& policy, std::string_view subject, Decision& decision);

}  // namespace sluice::service
