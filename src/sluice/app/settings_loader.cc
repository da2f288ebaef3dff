#include "sluice/app/settings_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "sluice/core/invalid_input.h"
#include "sluice/core/status_macros.h"
#include "sluice/db/database_url.h"
#include "sluice/policy/yaml_text.h"

namespace sluice::app {
namespace {

namespace fs = std::filesystem;

// What one source says of one setting: its values, and where they came from for errors.
struct Given {
  const Setting* setting;
  std::vector<std::string> values;
  std::string where;
};

const Setting* find_setting(std::string_view key) {
  const auto it = std::find_if(settings().begin(), settings().end(),
                               [&](const Setting& setting) { return setting.key == key; });
  return it == settings().end() ? nullptr : &*it;
}

// The one way a value reaches Settings, whatever its source.
Status apply(Settings& s, const Given& given) {
  if (given.setting->list) s.policy_files.clear();
  for (const std::string& value : given.values) {
    SLUICE_RETURN_IF_ERROR(invalid_input(given.where + ": ", given.setting->set(s, value)));
  }
  return Status();
}

// A file's settings up to its first error, and that error: applied after them, so errors come
// in the order the file gives its keys.
struct FileSettings {
  std::vector<Given> given;
  Status error;
};

FileSettings from_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return {.error = invalid_argument("config file " + path + ": cannot be read")};
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  StatusOr<std::vector<YAML::Node>> documents = policy::load_yaml_documents(text);
  if (!documents.ok()) {
    return {.error = invalid_argument("config file " + path + ": " + documents.status().message())};
  }
  if (documents->size() > 1) {
    return {.error = invalid_argument("config file " + path +
                                      ": holds several YAML documents; one is read")};
  }
  const YAML::Node root = documents->empty() ? YAML::Node() : documents->front();
  FileSettings read;
  if (root.IsNull()) return read;
  if (!root.IsMap())
    return {.error = invalid_argument("config file " + path + ": must be a YAML map")};
  const fs::path base = fs::path(path).parent_path();
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    std::string where = "config file ";  // "config file PATH: KEY", built once per setting
    where.append(path).append(": ").append(key);
    const Setting* setting = find_setting(key);
    if (setting == nullptr) {
      read.error = invalid_argument(where + ": unknown setting");
      return read;
    }
    std::vector<std::string> values;
    if (entry.second.IsSequence() && setting->list) {
      for (const auto& item : entry.second) values.push_back(item.as<std::string>(""));
    } else if (entry.second.IsScalar()) {
      values.push_back(entry.second.as<std::string>());
    } else if (entry.second.IsNull()) {
      values.push_back("");
    } else {
      read.error = invalid_argument(where + ": must be a " +
                                    (setting->list ? "string or a list of strings" : "scalar"));
      return read;
    }
    if (setting->list) {
      for (std::string& value : values) {
        if (!value.empty() && fs::path(value).is_relative()) {
          value = (base / value).lexically_normal().string();
        }
      }
    }
    read.given.push_back({setting, std::move(values), std::move(where)});
  }
  return read;
}

// A list setting's variable holds its values comma-separated.
std::vector<Given> from_environment(const EnvironmentReader& environment) {
  std::vector<Given> given;
  for (const Setting& setting : settings()) {
    const std::optional<std::string> value = environment(setting.env);
    if (!value) continue;
    std::vector<std::string> values;
    if (setting.list) {
      std::string_view rest = *value;
      while (!rest.empty()) {
        const std::size_t comma = rest.find(',');
        if (!rest.substr(0, comma).empty()) values.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    } else {
      values.push_back(*value);
    }
    given.push_back({&setting, std::move(values), setting.env});
  }
  return given;
}

std::vector<Given> from_flags(const std::map<std::string, std::vector<std::string>>& flags) {
  std::vector<Given> given;
  for (const Setting& setting : settings()) {
    const auto it = flags.find(setting.key);
    if (it == flags.end()) continue;
    given.push_back({&setting, it->second, flag_name(setting)});
  }
  return given;
}

}  // namespace

EnvironmentReader process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

StatusOr<Settings> load_settings(const SettingSources& sources) {
  std::string config = sources.config_file;
  if (config.empty()) config = sources.environment("SLUICE_CONFIG").value_or("");
  Settings s;
  const auto apply_all = [&s](const std::vector<Given>& given) -> Status {
    for (const Given& one : given) {
      SLUICE_RETURN_IF_ERROR(apply(s, one));
    }
    return Status();
  };
  if (!config.empty()) {
    const FileSettings file = from_file(config);
    SLUICE_RETURN_IF_ERROR(apply_all(file.given));
    SLUICE_RETURN_IF_ERROR(file.error);
  }
  SLUICE_RETURN_IF_ERROR(apply_all(from_environment(sources.environment)));
  SLUICE_RETURN_IF_ERROR(apply_all(from_flags(sources.flags)));
  return s;
}

std::string flag_help(const Setting& setting) {
  std::string help = setting.help + "\n  env " + setting.env + ", file key " + setting.key;
  const std::string shown = setting.show(Settings{});
  return help + ", default " + (shown.empty() ? std::string("(none)") : shown);
}

std::string print_settings(const Settings& s) {
  std::string out;
  for (const Setting& setting : settings()) {
    if (setting.list) {
      out += setting.key + ":";
      if (s.policy_files.empty()) out += " []";
      out += "\n";
      for (const std::string& f : s.policy_files) out += "  - " + f + "\n";
    } else {
      const bool may_hold_password = setting.key == "redis" || setting.key == "policies";
      const bool is_secret = setting.key == "metrics_token" || setting.key == "record_key";
      std::string shown = setting.show(s);
      if (may_hold_password) shown = db::redact_database_url(shown);
      if (is_secret && !shown.empty()) shown = "***";
      const nlohmann::json value = shown;
      out += setting.key + ": " + value.dump() + "\n";
    }
  }
  return out;
}

}  // namespace sluice::app
