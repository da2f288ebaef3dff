// PolicyLookup: how the decision path finds a policy by name without touching the database —
// an immutable snapshot swapped in when policies change (the SQL-backed PolicyCache), or a
// fixed set (tests, `sluice acquire --policy-file`). Thread-safe.
#pragma once

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "sluice/policy/descriptors.h"
#include "sluice/policy/policy.h"
#include "sluice/policy/policy_cache.h"

namespace sluice::service {

class PolicyLookup {
 public:
  virtual ~PolicyLookup() = default;
  // The policy named `name`, or nullptr. The pointer stays valid while the caller holds it, even
  // if policies change meanwhile.
  virtual std::shared_ptr<const policy::Policy> find(std::string_view name) const = 0;
  // The descriptor trees of the current policies (the Envoy RLS front end's lookup). Never null;
  // kept alive by the returned pointer like find's.
  virtual std::shared_ptr<const policy::DescriptorIndex> descriptors() const = 0;
};

// A fixed set of policies.
class StaticPolicyLookup final : public PolicyLookup {
 public:
  explicit StaticPolicyLookup(std::vector<policy::Policy> policies);
  std::shared_ptr<const policy::Policy> find(std::string_view name) const override;
  std::shared_ptr<const policy::DescriptorIndex> descriptors() const override {
    return descriptors_;
  }

 private:
  std::vector<std::shared_ptr<const policy::Policy>> policies_;
  std::shared_ptr<const policy::DescriptorIndex> descriptors_;
};

// The current snapshot of a PolicyCache (policies from a database, refreshed as they change).
class CachedPolicyLookup final : public PolicyLookup {
 public:
  // `cache` must outlive the lookup.
  explicit CachedPolicyLookup(const policy::PolicyCache& cache) : cache_(cache) {}
  std::shared_ptr<const policy::Policy> find(std::string_view name) const override {
    return cache_.find(name);
  }
  // Rebuilt on the first call after the cache publishes a new snapshot.
  std::shared_ptr<const policy::DescriptorIndex> descriptors() const override;

 private:
  struct Indexed {
    std::shared_ptr<const policy::PolicyCache::Snapshot> snapshot;
    std::shared_ptr<const policy::DescriptorIndex> index;
  };
  const policy::PolicyCache& cache_;
  mutable std::atomic<std::shared_ptr<const Indexed>> indexed_;
};

}  // namespace sluice::service
