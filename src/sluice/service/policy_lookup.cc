#include "sluice/service/policy_lookup.h"

namespace sluice::service {

StaticPolicyLookup::StaticPolicyLookup(std::vector<policy::Policy> policies) {
  for (policy::Policy& policy : policies) {
    policies_.push_back(std::make_shared<const policy::Policy>(std::move(policy)));
  }
}

std::shared_ptr<const policy::Policy> StaticPolicyLookup::find(std::string_view name) const {
  for (const auto& policy : policies_) {
    if (policy->name == name) return policy;
  }
  return nullptr;
}

}  // namespace sluice::service
