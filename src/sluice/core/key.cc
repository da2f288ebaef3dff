#include "sluice/core/key.h"

#include <algorithm>
#include <array>

namespace sluice {
namespace {

// [A-Za-z0-9._-] as a table: policy names are checked on every decision.
constexpr std::array<bool, 256> kPolicyChars = [] {
  std::array<bool, 256> table{};
  for (char c = 'a'; c <= 'z'; ++c) table[static_cast<unsigned char>(c)] = true;
  for (char c = 'A'; c <= 'Z'; ++c) table[static_cast<unsigned char>(c)] = true;
  for (char c = '0'; c <= '9'; ++c) table[static_cast<unsigned char>(c)] = true;
  for (char c : {'.', '_', '-'}) table[static_cast<unsigned char>(c)] = true;
  return table;
}();

bool is_policy_char(char c) { return kPolicyChars[static_cast<unsigned char>(c)]; }

}  // namespace

bool is_valid_policy_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxPolicyNameBytes &&
         std::all_of(name.begin(), name.end(), is_policy_char);
}

Status validate_policy_name(std::string_view name, std::string_view field) {
  if (is_valid_policy_name(name)) return {};
  std::string message(field);
  if (name.empty()) return invalid_argument(message + ": must not be empty");
  if (name.size() > kMaxPolicyNameBytes) {
    return invalid_argument(message + ": must be at most 128 characters");
  }
  return invalid_argument(message + ": may contain only letters, digits, '.', '_' and '-'");
}

Status validate_subject(std::string_view subject, std::string_view field) {
  if (subject.size() <= kMaxSubjectBytes) return {};
  return invalid_argument(std::string(field) + ": must be at most 1024 bytes (got " +
                          std::to_string(subject.size()) + ")");
}

std::string subject_id(std::string_view policy, std::string_view subject) {
  std::string id;
  id.reserve(policy.size() + 1 + subject.size());
  id.append(policy).push_back(':');
  id.append(subject);
  return id;
}

std::string redis_limit_key(std::string_view policy, std::string_view subject,
                            std::size_t limit_index) {
  std::string key = "sluice:{";
  key.append(policy).push_back(':');
  key.append(subject).append("}:").append(std::to_string(limit_index));
  return key;
}

std::string redis_penalty_key(std::string_view policy, std::string_view subject) {
  std::string key = "sluice:{";
  key.append(policy).push_back(':');
  key.append(subject).append("}:p");
  return key;
}

}  // namespace sluice
