// Descriptor matching for the Envoy Rate Limit Service (docs/envoy.md): a policy's optional
// `descriptors` section places it in a domain's descriptor tree, and DescriptorIndex finds the
// policy a request descriptor reaches, with envoyproxy/ratelimit's semantics:
//   - each level matches an entry by key and value, else by a wildcard value (each '*' stands for
//     any run of characters: "foo*" is any value starting with "foo", "/api/*/edit" any value
//     between those ends), else by key alone (the more specific match wins, and there is no
//     backtracking once one is taken);
//   - a descriptor matches only when its last entry lands on a node that holds a policy;
//   - an unmatched descriptor is not limited.
// The domain is the app: a policy is in the tree of every app it lists ("*": every domain, used
// when the domain's own tree has no match). Everything here is pure and immutable once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/algorithm/validate.h"

namespace sluice::policy {

struct Policy;

// One level of a descriptor path: a key, and the value it must have (absent: any value; holding
// a '*': a wildcard, each '*' any run of characters).
struct DescriptorEntry {
  std::string key;
  std::optional<std::string> value;
  // A wildcard's values share one count (envoyproxy/ratelimit's share_threshold): the subject
  // holds the pattern at this level instead of the request's value. Only with a wildcard value.
  bool shared = false;
  friend bool operator==(const DescriptorEntry&, const DescriptorEntry&) = default;
};

// How the gRPC front end writes a matched descriptor's status (docs/envoy.md "Answers").
enum class DescriptorAnswers : std::uint8_t {
  kSluice,  // current_limit.name the policy's name, duration_until_reset to the microsecond
  // As envoyproxy/ratelimit (an imported configuration): current_limit.name the rate limit's
  // `name` (limit_name, possibly empty), duration_until_reset in whole seconds (rounded up), an
  // unlimited descriptor's limit_remaining 4294967295.
  kEnvoy,
};

// A policy's place in its domains' descriptor trees and envoyproxy/ratelimit's node options.
struct DescriptorSection {
  std::vector<DescriptorEntry> entries;  // the path from the root; 1..kMaxDescriptorDepth
  // The descriptor is matched and never limited (the policy needs no limits).
  bool unlimited = false;
  // Kept from envoyproxy/ratelimit's node (metrics stay per policy: docs/envoy.md).
  bool detailed_metric = false;
  // A request descriptor's own `limit` (RateLimitOverride) replaces the policy's limits with a
  // fixed window of requests_per_unit per unit, counted apart from the policy's own state.
  bool allow_override = false;
  // Requests reaching this descriptor report a cost already spent (Envoy's
  // `apply_on_stream_done`, hits_addend = the response's usage): they are charged
  // (a Limiter charge) rather than decided, so they are never refused for the budget, and
  // move it into debt down to the policy's max_debt (docs/quotas.md). Not with unlimited or
  // allow_override.
  bool charge = false;
  // envoyproxy/ratelimit's rate_limit.name: what `replaces` names, and the current_limit.name of
  // kEnvoy answers. Empty: none.
  std::string limit_name;
  // The limit names this path replaces: when one call's descriptors reach both, the replaced
  // one is not limited (nor counted) in that call (envoyproxy/ratelimit's `replaces`).
  std::vector<std::string> replaces;
  DescriptorAnswers answers = DescriptorAnswers::kSluice;
  friend bool operator==(const DescriptorSection&, const DescriptorSection&) = default;
};

inline constexpr std::size_t kMaxDescriptorDepth = 16;
inline constexpr std::size_t kMaxDescriptorTextBytes = 256;

// Reads a `descriptors` section ({"entries": [{"key", "value"?, "shared"?}...], "unlimited"?,
// "detailed_metric"?, "allow_override"?, "charge"?, "name"?, "replaces"?, "answers"?}); every
// problem is an error naming its field under `prefix`.
std::optional<DescriptorSection> descriptor_section_from_json(
    const nlohmann::json& section, const std::string& prefix,
    std::vector<algorithm::FieldError>& errors);
nlohmann::json descriptor_section_to_json(const DescriptorSection& section);

// One entry of a request descriptor, as the wire carries it.
struct RequestEntry {
  std::string_view key;
  std::string_view value;
};

struct DescriptorMatch {
  std::shared_ptr<const Policy> policy;
  // The subject the policy limits: the request entries' values in order, each '\' and '|'
  // escaped with '\', joined by '|' (injective for a fixed path, readable in admin views).
  std::string subject;
};

class DescriptorIndex {
 public:
  // Indexes the enabled policies that have a descriptors section. Two policies on the same path
  // of the same domain: the one whose name sorts first wins, and conflicts() names the other.
  explicit DescriptorIndex(const std::vector<std::shared_ptr<const Policy>>& policies);

  // The policy `entries` reach in `domain`'s tree (then in the "*" tree), or nullopt.
  std::optional<DescriptorMatch> match(std::string_view domain,
                                       const std::vector<RequestEntry>& entries) const;

  // "policy b: same descriptor path as policy a in domain d", one line per shadowed policy.
  const std::vector<std::string>& conflicts() const { return conflicts_; }

 private:
  struct Wildcard {
    std::string key;
    std::string pattern;  // the value, '*' standing for any run of characters
    std::string index_key;
    bool shared = false;  // DescriptorEntry::shared: the subject holds the pattern
  };
  struct Node {
    // Children by "key\0value" (value and wildcard matches) and by "key" (key-only matches).
    // Policy keys and values hold no NUL byte, so the two never collide.
    std::unordered_map<std::string, Node> children;
    std::vector<Wildcard> wildcards;  // the wildcard children, tried in order
    std::shared_ptr<const Policy> policy;
  };
  // The policy `entries` reach from `root`, and in `values` the value each level counts under
  // (the request's, or a shared wildcard's pattern).
  static const std::shared_ptr<const Policy>* match_in(const Node& root,
                                                       const std::vector<RequestEntry>& entries,
                                                       std::vector<std::string_view>& values);

  std::unordered_map<std::string, Node> domains_;  // "*" included
  std::vector<std::string> conflicts_;
};

// Whether some request descriptor could reach both paths: same length, and at each level the
// same key with values that can both hold (absent: any; "foo*": starting with foo; else equal).
// A policy of one domain on such a path replaces, in that domain, the "*" policy on the other
// (DescriptorIndex::match tries the domain's own tree first).
bool descriptor_paths_overlap(const std::vector<DescriptorEntry>& a,
                              const std::vector<DescriptorEntry>& b);

// The subject of DescriptorMatch for these entries (or these values, one per level).
std::string descriptor_subject(const std::vector<RequestEntry>& entries);
std::string descriptor_subject_of_values(const std::vector<std::string_view>& values);

// Whether `value` fits `pattern`, where each '*' stands for any run of characters (none
// included) and every other character for itself. Linear in practice: backtracks to the last
// '*' only.
bool wildcard_matches(std::string_view pattern, std::string_view value);
bool is_wildcard(std::string_view value);

}  // namespace sluice::policy
