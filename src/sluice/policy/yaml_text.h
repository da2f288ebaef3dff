// Reading YAML text with yaml-cpp, safely: every YAML reader in Sluice (policy documents, Envoy
// configurations, the serve config file) goes through here.
//
// Two things yaml-cpp does not refuse by itself are refused here, with the reason:
//   - bytes that are not UTF-8 (yaml-cpp passes them through, and a later JSON dump throws);
//   - text after which yaml-cpp's parser stops advancing: a top-level flow collection followed by
//     a comma (`{a: 1},` after a comment or `---`) makes yaml-cpp 0.7 return empty documents
//     forever, and LoadAll grow until memory runs out.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>
#include <vector>

#include "sluice/status.h"

namespace sluice::policy {

// The documents of `text` in order (none for empty text), or invalid_argument whose message
// starts "not valid YAML: " and says where.
StatusOr<std::vector<YAML::Node>> load_yaml_documents(std::string_view text);

}  // namespace sluice::policy
