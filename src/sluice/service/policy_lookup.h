// PolicyLookup: how the decision path finds a policy by name without touching the database —
// an immutable snapshot swapped in when policies change (the SQL-backed PolicyCache), or a
// fixed set (tests, `sluice acquire --policy-file`). Thread-safe.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "sluice/policy/policy.h"
#include "sluice/policy/policy_cache.h"

namespace sluice::service {

class PolicyLookup {
 public:
  virtual ~PolicyLookup() = default;
  // The policy named `name`, or nullptr. The pointer stays valid while the caller holds it, even
  // if policies change meanwhile.
  virtual std::shared_ptr<const policy::Policy> find(std::string_view name) const = 0;
};

// A fixed set of policies.
class StaticPolicyLookup final : public PolicyLookup {
 public:
  explicit StaticPolicyLookup(std::vector<policy::Policy> policies);
  std::shared_ptr<const policy::Policy> find(std::string_view name) const override;

 private:
  std::vector<std::shared_ptr<const policy::Policy>> policies_;
};

// The current snapshot of a PolicyCache (policies from a database, refreshed as they change).
class CachedPolicyLookup final : public PolicyLookup {
 public:
  // `cache` must outlive the lookup.
  explicit CachedPolicyLookup(const policy::PolicyCache& cache) : cache_(cache) {}
  std::shared_ptr<const policy::Policy> find(std::string_view name) const override {
    return cache_.find(name);
  }

 private:
  const policy::PolicyCache& cache_;
};

}  // namespace sluice::service
