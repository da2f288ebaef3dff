// SqlPolicyRepository: PolicyRepository (repository.h) over a Database (database.h).
//
// Every change runs in one write transaction holding the `policies` counter's lock: it reads the
// stored row, checks the caller's expected version, writes the row with `version + 1` (an
// UPDATE ... WHERE name = ? AND version = ? whose affected-row count is checked as well), appends
// a history entry whose id is the bumped revision, and commits. A stale version is refused with
// Aborted ("conflict: policy X is at version N, not M") and changes nothing.
#pragma once

#include <memory>

#include "sluice/core/clock.h"
#include "sluice/db/database.h"
#include "sluice/policy/repository.h"

namespace sluice::db {

// `clock` (default: the system clock) stamps created_at/updated_at and history entries; it
// must outlive the repository.
std::unique_ptr<policy::PolicyRepository> make_sql_policy_repository(std::shared_ptr<Database> db,
                                                                     const Clock* clock = nullptr);

}  // namespace sluice::db
