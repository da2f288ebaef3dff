#include "sluice/store/store.h"

#include <random>

#include "sluice/core/key.h"

namespace sluice::store {

Status validate_subject_ref(const SubjectRef& ref) {
  if (Status status = validate_policy_name(ref.policy, "policy"); !status.ok()) return status;
  if (ref.limits.empty()) return invalid_argument("limits: a policy needs at least one limit");
  return validate_subject(ref.subject);
}

std::string new_lease_id() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t bits = engine();
    for (int i = 0; i < 16; ++i, bits >>= 4) id[half * 16 + i] = kHex[bits & 0xf];
  }
  return id;
}

}  // namespace sluice::store
