#include "sluice/service/rollout.h"

#include <cmath>

namespace sluice::service {

std::uint32_t rollout_bucket(std::string_view policy, std::string_view subject) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  const auto add = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 0x100000001b3ULL;
  };
  for (char c : policy) add(static_cast<unsigned char>(c));
  add(0);
  for (char c : subject) add(static_cast<unsigned char>(c));
  // FNV's low bits mix poorly for short keys: fold the high half in first.
  hash ^= hash >> 32;
  return static_cast<std::uint32_t>(hash % kRolloutBuckets);
}

bool enforced_for(const policy::Policy& policy, std::string_view subject) {
  if (policy.mode != policy::Mode::kEnforce) return false;
  if (!policy.rollout) return true;
  const auto enforced_buckets =
      static_cast<std::uint32_t>(std::llround(*policy.rollout * (kRolloutBuckets / 100)));
  return rollout_bucket(policy.name, subject) < enforced_buckets;
}

void apply_mode(const policy::Policy& policy, std::string_view subject, Decision& decision) {
  if (policy.rollout && !enforced_for(policy, subject)) decision.mode = policy::Mode::kShadow;
  if (!decision.verdict.allowed && decision.mode == policy::Mode::kShadow) {
    decision.verdict.allowed = true;
    decision.shadow_denied = true;
  }
}

}  // namespace sluice::service
