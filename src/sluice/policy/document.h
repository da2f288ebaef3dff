// Policy documents: the JSON/YAML shape of DESIGN.md §5a, read and written. Reading validates
// everything at once and reports every problem with its field ("limits[1].window: must be
// greater than 0"); unknown fields are errors, never silently dropped.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/policy/policy.h"

namespace sluice::policy {

using algorithm::FieldError;

struct ParsedPolicy {
  std::optional<Policy> policy;  // set exactly when errors is empty
  std::vector<FieldError> errors;
};

struct DocumentOptions {
  algorithm::ValidationOptions limits;
  // Accept the audit fields (version, created_by, ...) as exported; otherwise they are errors.
  bool allow_audit_fields = true;
};

ParsedPolicy policy_from_json(const nlohmann::json& document, const DocumentOptions& options = {});
// Text in JSON or YAML (JSON is YAML, but JSON text gets JSON's clearer error messages).
ParsedPolicy policy_from_text(std::string_view text, const DocumentOptions& options = {});

nlohmann::json policy_to_json(const Policy& policy);
nlohmann::json limit_to_json(const algorithm::Limit& limit);

// "limits[1].window: must be greater than 0; name: must not be empty"
std::string join_errors(const std::vector<FieldError>& errors);

}  // namespace sluice::policy
