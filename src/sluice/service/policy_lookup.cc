#include "sluice/service/policy_lookup.h"

namespace sluice::service {

StaticPolicyLookup::StaticPolicyLookup(std::vector<policy::Policy> policies) {
  for (policy::Policy& policy : policies) {
    policies_.push_back(std::make_shared<const policy::Policy>(std::move(policy)));
  }
  descriptors_ = std::make_shared<const policy::DescriptorIndex>(policies_);
}

std::shared_ptr<const policy::Policy> StaticPolicyLookup::find(std::string_view name) const {
  for (const auto& policy : policies_) {
    if (policy->name == name) return policy;
  }
  return nullptr;
}

std::shared_ptr<const policy::DescriptorIndex> CachedPolicyLookup::descriptors() const {
  std::shared_ptr<const policy::PolicyCache::Snapshot> snapshot = cache_.snapshot();
  std::shared_ptr<const Indexed> indexed = indexed_.load();
  if (indexed && indexed->snapshot == snapshot) return indexed->index;
  // Two callers may both rebuild after a change; each result is correct for the snapshot it read.
  std::vector<std::shared_ptr<const policy::Policy>> policies;
  policies.reserve(snapshot->policies.size());
  for (const auto& [name, policy] : snapshot->policies) policies.push_back(policy);
  auto fresh = std::make_shared<const Indexed>(Indexed{
      .snapshot = snapshot, .index = std::make_shared<const policy::DescriptorIndex>(policies)});
  indexed_.store(fresh);
  return fresh->index;
}

}  // namespace sluice::service
