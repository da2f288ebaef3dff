// Policies from files, as `sluice serve --policy-file`, `sluice acquire` and the library read
// them: each file holds one or more documents (document.h), a directory holds .yaml/.yml/.json
// files read in name order, and a policy name defined twice is an error naming both places.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sluice/policy/policy.h"
#include "sluice/status.h"

namespace sluice::policy {

// (origin, text): where a text came from, for error messages, and the text itself.
using PolicyTexts = std::vector<std::pair<std::string, std::string>>;

// The policies of every document in `texts`. InvalidArgument naming the origin and the fields.
StatusOr<std::vector<Policy>> parse_policy_texts(const PolicyTexts& texts);

// The policies of the files and directories `paths` (none for no paths). InvalidArgument for an
// unreadable file, an empty directory or an invalid document.
StatusOr<std::vector<Policy>> load_policy_files(const std::vector<std::string>& paths);

}  // namespace sluice::policy
