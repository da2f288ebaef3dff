#include "sluice/policy/policy_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"

namespace sluice::policy {

namespace fs = std::filesystem;

namespace {

StatusOr<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid_argument("cannot read policy file " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

StatusOr<std::vector<Policy>> parse_policy_texts(const PolicyTexts& texts) {
  std::vector<Policy> policies;
  std::map<std::string, std::string> origin_of;
  for (const auto& [origin, text] : texts) {
    ParsedPolicies parsed = policies_from_text(text);
    if (!parsed.errors.empty()) {
      return invalid_argument("invalid policy in " + origin + ": " + join_errors(parsed.errors));
    }
    for (Policy& p : parsed.policies) {
      if (auto [it, inserted] = origin_of.emplace(p.name, origin); !inserted) {
        return invalid_argument("policy \"" + p.name + "\" is defined twice: in " + it->second +
                                " and in " + origin);
      }
      policies.push_back(std::move(p));
    }
  }
  return policies;
}

StatusOr<std::vector<Policy>> load_policy_files(const std::vector<std::string>& paths) {
  PolicyTexts texts;
  for (const std::string& path : paths) {
    std::error_code ec;
    std::vector<fs::path> files;
    if (fs::is_directory(path, ec)) {
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        const std::string ext = entry.path().extension().string();
        if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml" || ext == ".json")) {
          files.push_back(entry.path());
        }
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) return invalid_argument("policy directory " + path + " has no policies");
    } else {
      files.emplace_back(path);
    }
    for (const fs::path& file : files) {
      SLUICE_ASSIGN_OR_RETURN(std::string text, read_text(file));
      texts.emplace_back(file.string(), std::move(text));
    }
  }
  return parse_policy_texts(texts);
}

}  // namespace sluice::policy
