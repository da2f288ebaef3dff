// The key the Limiter's per-subject tables (the over-limit cache, token leases, the usage split
// mode last saw) file a subject under: its policy's name and the subject, apart by a NUL byte,
// which a policy name never holds, so two different pairs never share a key.
#pragma once

#include <string>
#include <string_view>

namespace sluice::service {

inline std::string policy_subject_key(std::string_view policy, std::string_view subject) {
  std::string key;
  key.reserve(policy.size() + 1 + subject.size());
  key.append(policy).push_back('\0');
  key.append(subject);
  return key;
}

}  // namespace sluice::service
