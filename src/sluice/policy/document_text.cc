// Policy documents as text: one (policy_from_text) or many (policies_from_text), in JSON or YAML.
#include <map>
#include <nlohmann/json.hpp>

#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"
#include "sluice/policy/yaml_json.h"
#include "sluice/policy/yaml_text.h"

namespace sluice::policy {
namespace {

using nlohmann::json;

// Prefixes each error of document `index` with "[index]".
void append_indexed(std::vector<FieldError>& errors, std::size_t index,
                    const std::vector<FieldError>& document_errors) {
  const std::string prefix = "[" + std::to_string(index) + "]";
  for (const FieldError& error : document_errors) {
    errors.push_back({.field = error.field.empty() ? prefix : prefix + "." + error.field,
                      .message = error.message});
  }
}

// The first YAML document of `text` as JSON (null when there is none).
StatusOr<json> first_yaml_document(std::string_view text) {
  SLUICE_ASSIGN_OR_RETURN(const std::vector<YAML::Node> documents, load_yaml_documents(text));
  std::size_t budget = kMaxYamlValues;
  return yaml_to_json(documents.empty() ? YAML::Node() : documents.front(), budget);
}

// Every YAML document of `text` as JSON, the alias budget shared between them.
StatusOr<std::vector<json>> yaml_documents(std::string_view text) {
  SLUICE_ASSIGN_OR_RETURN(const std::vector<YAML::Node> nodes, load_yaml_documents(text));
  std::size_t budget = kMaxYamlValues;
  std::vector<json> documents;
  for (const YAML::Node& node : nodes) {
    SLUICE_ASSIGN_OR_RETURN(json document, yaml_to_json(node, budget));
    documents.push_back(std::move(document));
  }
  return documents;
}

}  // namespace

ParsedPolicy policy_from_text(std::string_view text, const DocumentOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded()) {
      return {.errors = {{.field = "", .message = "not valid JSON"}}};
    }
    return policy_from_json(document, options);
  }
  const StatusOr<json> document = first_yaml_document(text);
  if (document.ok()) return policy_from_json(*document, options);
  return {.errors = {{.field = "", .message = document.status().message()}}};
}

ParsedPolicies policies_from_text(std::string_view text, const DocumentOptions& options) {
  ParsedPolicies result;
  std::vector<json> documents;
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    result.errors.push_back({.field = "", .message = "no policy documents found"});
    return result;
  }
  if (text[first] == '{' || text[first] == '[') {
    json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      result.errors.push_back({.field = "", .message = "not valid JSON"});
      return result;
    }
    documents.push_back(std::move(parsed));
  } else {
    StatusOr<std::vector<json>> converted = yaml_documents(text);
    if (!converted.ok()) {
      result.errors.push_back({.field = "", .message = converted.status().message()});
      return result;
    }
    documents = std::move(*converted);
  }
  if (documents.empty()) {
    result.errors.push_back({.field = "", .message = "no policy documents found"});
    return result;
  }
  // One document holding a list: the list is the policies.
  if (documents.size() == 1 && documents.front().is_array()) {
    json list = std::move(documents.front());
    documents.assign(list.begin(), list.end());
  }
  std::map<std::string, std::size_t, std::less<>> first_index;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    ParsedPolicy parsed = policy_from_json(documents[i], options);
    append_indexed(result.errors, i, parsed.errors);
    if (!parsed.policy) continue;
    const auto [it, inserted] = first_index.emplace(parsed.policy->name, i);
    if (!inserted) {
      append_indexed(
          result.errors, i,
          {{.field = "name",
            .message = "duplicates the policy of document [" + std::to_string(it->second) + "]"}});
      continue;
    }
    result.policies.push_back(std::move(*parsed.policy));
  }
  if (!result.errors.empty()) result.policies.clear();
  return result;
}

}  // namespace sluice::policy
