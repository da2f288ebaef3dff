// PolicyRepository: where policies live (DESIGN.md §4) — SQLite by default, MySQL/MariaDB or
// PostgreSQL for shared deployments, chosen by URL, over one portable schema with versioned
// migrations applied when opened. Every change bumps the policy's `version` (an update naming a
// stale version is refused: no lost updates), appends the old and new document to the history,
// and bumps the repository's global revision so running services notice changes cheaply.
// Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/policy/policy.h"
#include "sluice/status.h"
#include "sluice/time.h"

namespace sluice::policy {

enum class ChangeAction { kCreate, kUpdate, kDelete };

// One entry of a policy's audit history. Kept when the policy is deleted.
struct PolicyChange {
  std::int64_t id = 0;  // increasing in commit order
  std::string policy;
  ChangeAction action = ChangeAction::kCreate;
  std::string actor;
  Micros at = 0;
  std::int64_t version = 0;                    // the policy's version after the change (0: deleted)
  std::optional<nlohmann::json> old_document;  // policy_to_json form; absent for create
  std::optional<nlohmann::json> new_document;  // absent for delete
};

class PolicyRepository {
 public:
  virtual ~PolicyRepository() = default;

  // All policies, by name; with `app`, only those listing it (or "*").
  virtual StatusOr<std::vector<Policy>> list(std::optional<std::string_view> app = {}) = 0;
  // NotFound.
  virtual StatusOr<Policy> get(std::string_view name) = 0;
  // Stores a validated policy with version 1 and the audit fields set. AlreadyExists.
  virtual StatusOr<Policy> create(Policy policy, std::string_view actor) = 0;
  // Replaces the policy of the same name if its stored version is `expected_version`.
  // NotFound; Aborted ("conflict: ...") when the version is stale. Returns the stored policy.
  virtual StatusOr<Policy> update(Policy policy, std::int64_t expected_version,
                                  std::string_view actor) = 0;
  // NotFound; Aborted when stale. The history stays.
  virtual Status remove(std::string_view name, std::int64_t expected_version,
                        std::string_view actor) = 0;
  // Oldest first; kept after deletion. Empty (not NotFound) for a name never seen.
  virtual StatusOr<std::vector<PolicyChange>> history(std::string_view name) = 0;
  // Creates or updates every policy in one transaction: all or nothing.
  virtual Status import(const std::vector<Policy>& policies, std::string_view actor) = 0;
  // Increases with every committed change; cheap to poll.
  virtual StatusOr<std::int64_t> revision() = 0;
};

// The answer to a write that names a version other than the stored one (409 over HTTP), in the
// same words from every repository and from the admin API's own check.
inline Status version_conflict(std::string_view name, std::int64_t stored, std::int64_t expected) {
  return {StatusCode::kAborted, "conflict: policy " + std::string(name) + " is at version " +
                                    std::to_string(stored) + ", not " + std::to_string(expected)};
}

}  // namespace sluice::policy
