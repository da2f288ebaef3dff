// Policy documents: the JSON/YAML shape of DESIGN.md §5a, read and written. Reading validates
// everything at once and reports every problem with its field ("limits[1].window: must be
// greater than 0"); unknown fields are errors, never silently dropped. Reading one document is
// document.cc, text of one or many document_text.cc, writing document_write.cc; the YAML of
// the JSON model is yaml_json.h.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/validate.h"
#include "sluice/policy/policy.h"
#include "sluice/policy/yaml_json.h"  // json_to_yaml, for the documents' YAML

namespace sluice::policy {

using algorithm::FieldError;

struct ParsedPolicy {
  std::optional<Policy> policy;  // set exactly when errors is empty
  std::vector<FieldError> errors;
};

// Bounds on what one policy may hold, so a document cannot make every later read, export or
// history of it expensive (a 100 000-character description once crashed the YAML writer).
inline constexpr std::size_t kMaxDescriptionBytes = 4096;
inline constexpr std::size_t kMaxLimitsPerPolicy = 32;

struct DocumentOptions {
  algorithm::ValidationOptions limits;
  // Errors naming `description` / `limits` beyond these. Stored policies are read back with
  // larger bounds, so one written before a bound existed stays readable.
  std::size_t max_description_bytes = kMaxDescriptionBytes;
  std::size_t max_limits = kMaxLimitsPerPolicy;
  // Accept the audit fields (version, created_by, ...) as exported; otherwise they are errors.
  bool allow_audit_fields = true;
};

ParsedPolicy policy_from_json(const nlohmann::json& document, const DocumentOptions& options = {});
// Text in JSON or YAML (JSON is YAML, but JSON text gets JSON's clearer error messages).
ParsedPolicy policy_from_text(std::string_view text, const DocumentOptions& options = {});

// Several policies in one text, as `sluice policy export` writes and `import` reads: a JSON or
// YAML list of documents, a single document, or YAML documents separated by "---". Every
// document is read (nothing stops at the first bad one) and each error names its document's
// index, 0-based: "[2].limits[0].window: must be greater than 0". A name appearing twice is an
// error on the later document. Empty text is an error; an explicit empty list is not.
struct ParsedPolicies {
  std::vector<Policy> policies;  // complete exactly when errors is empty
  std::vector<FieldError> errors;
};
ParsedPolicies policies_from_text(std::string_view text, const DocumentOptions& options = {});

nlohmann::json policy_to_json(const Policy& policy);
nlohmann::json limit_to_json(const algorithm::Limit& limit);

// "limits[1].window: must be greater than 0; name: must not be empty"
std::string join_errors(const std::vector<FieldError>& errors);

}  // namespace sluice::policy
