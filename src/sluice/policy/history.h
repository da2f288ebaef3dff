// A policy's audit history as the CLI and the admin API show it, and whose permissions govern
// reading it once the policy is gone.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/policy/repository.h"

namespace sluice::policy {

std::string_view change_action_name(ChangeAction action);  // "create", "update", "delete"

// {"id", "policy", "action", "actor", "at" (Unix µs), "version", "old"?, "new"?}
nlohmann::json change_to_json(const PolicyChange& change);

// The apps the policy listed in its last recorded document (the new one, or the old one of a
// deletion): reading a deleted policy's history takes the permissions it last had.
std::vector<std::string> last_listed_apps(const std::vector<PolicyChange>& history);

// The apps a recorded document lists (none for a document without a valid "apps" array).
std::vector<std::string> listed_apps(const nlohmann::json& document);

// The changes of `history` whose every recorded document (old and new) lists apps `may_read`
// accepts, in order. A name outlives its policy: once deleted, it may be re-created under
// other apps, and the earlier incarnation's documents (descriptions, limits) stay with the
// apps that could read them (issue 32, M2).
template <typename MayRead>
std::vector<PolicyChange> readable_changes(const std::vector<PolicyChange>& history,
                                           MayRead may_read) {
  std::vector<PolicyChange> readable;
  for (const PolicyChange& change : history) {
    const bool old_ok = !change.old_document || may_read(listed_apps(*change.old_document));
    const bool new_ok = !change.new_document || may_read(listed_apps(*change.new_document));
    if (old_ok && new_ok) readable.push_back(change);
  }
  return readable;
}

}  // namespace sluice::policy
