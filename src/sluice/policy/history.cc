#include "sluice/policy/history.h"

namespace sluice::policy {

std::string_view change_action_name(ChangeAction action) {
  switch (action) {
    case ChangeAction::kCreate:
      return "create";
    case ChangeAction::kUpdate:
      return "update";
    case ChangeAction::kDelete:
      return "delete";
  }
  return "?";
}

nlohmann::json change_to_json(const PolicyChange& change) {
  nlohmann::json entry = {{"id", change.id},
                          {"policy", change.policy},
                          {"action", change_action_name(change.action)},
                          {"actor", change.actor},
                          {"at", change.at},
                          {"version", change.version}};
  if (change.old_document) entry["old"] = *change.old_document;
  if (change.new_document) entry["new"] = *change.new_document;
  return entry;
}

std::vector<std::string> listed_apps(const nlohmann::json& document) {
  std::vector<std::string> apps;
  if (!document.is_object() || !document.contains("apps") || !document["apps"].is_array()) {
    return apps;
  }
  for (const nlohmann::json& app : document["apps"]) {
    if (app.is_string()) apps.push_back(app.get<std::string>());
  }
  return apps;
}

std::vector<std::string> last_listed_apps(const std::vector<PolicyChange>& history) {
  if (history.empty()) return {};
  const PolicyChange& last = history.back();
  return listed_apps(last.new_document ? *last.new_document
                                       : last.old_document.value_or(nlohmann::json()));
}

}  // namespace sluice::policy
