// Subject and key encoding shared by every store (DESIGN.md §3).
//
// Redis key of limit i of (policy, subject): "sluice:{<policy>:<subject>}:<i>". Policy names are
// [A-Za-z0-9._-]{1,128}, so the first ':' after '{' ends the policy, the trailing ":<digits>"
// is the index, and the encoding is injective. Subjects are arbitrary bytes (NUL, newlines,
// braces, non-UTF-8) up to 1 024 bytes. All limit keys of one (policy, subject) share the same
// prefix up to the first '}', so Redis Cluster's hash tag keeps them in one slot even when the
// subject itself contains '}'.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sluice/status.h"

namespace sluice {

inline constexpr std::size_t kMaxPolicyNameBytes = 128;
inline constexpr std::size_t kMaxSubjectBytes = 1024;

bool is_valid_policy_name(std::string_view name);
// InvalidArgument naming `field` when the name is empty, too long or has a forbidden character.
Status validate_policy_name(std::string_view name, std::string_view field = "name");
// InvalidArgument naming `field` when the subject is longer than kMaxSubjectBytes.
Status validate_subject(std::string_view subject, std::string_view field = "key");

// "<policy>:<subject>": identifies one subject's state under one policy (all its limits).
std::string subject_id(std::string_view policy, std::string_view subject);

// "sluice:{<policy>:<subject>}:<limit_index>".
std::string redis_limit_key(std::string_view policy, std::string_view subject,
                            std::size_t limit_index);

// "sluice:{<policy>:<subject>}:p": the subject's penalty box, in the same hash slot as its limits.
std::string redis_penalty_key(std::string_view policy, std::string_view subject);

}  // namespace sluice
