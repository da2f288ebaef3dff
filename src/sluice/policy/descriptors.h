// Descriptor matching for the Envoy Rate Limit Service (docs/envoy.md): a policy's optional
// `descriptors` section places it in a domain's descriptor tree, and DescriptorIndex finds the
// policy a request descriptor reaches, with envoyproxy/ratelimit's semantics:
//   - each level matches an entry by key and value, else by a wildcard value ("foo*": any value
//     starting with "foo"), else by key alone (the more specific match wins, and there is no
//     backtracking once one is taken);
//   - a descriptor matches only when its last entry lands on a node that holds a policy;
//   - an unmatched descriptor is not limited.
// The domain is the app: a policy is in the tree of every app it lists ("*": every domain, used
// when the domain's own tree has no match). Everything here is pure and immutable once built.
#pragma once

#include <cstddef>
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

// One level of a descriptor path: a key, and the value it must have (absent: any value; ending
// in '*': any value starting with what precedes the '*').
struct DescriptorEntry {
  std::string key;
  std::optional<std::string> value;
  friend bool operator==(const DescriptorEntry&, const DescriptorEntry&) = default;
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
  friend bool operator==(const DescriptorSection&, const DescriptorSection&) = default;
};

inline constexpr std::size_t kMaxDescriptorDepth = 16;
inline constexpr std::size_t kMaxDescriptorTextBytes = 256;

// Reads a `descriptors` section ({"entries": [{"key", "value"?}...], "unlimited"?,
// "detailed_metric"?, "allow_override"?, "charge"?}); every problem is an error naming its field
// under `prefix`.
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
    std::string prefix;  // the value without its trailing '*'
    std::string index_key;
  };
  struct Node {
    // Children by "key\0value" (value and wildcard matches) and by "key" (key-only matches).
    // Policy keys and values hold no NUL byte, so the two never collide.
    std::unordered_map<std::string, Node> children;
    std::vector<Wildcard> wildcards;  // the wildcard children, tried in order
    std::shared_ptr<const Policy> policy;
  };
  static const std::shared_ptr<const Policy>* match_in(const Node& root,
                                                       const std::vector<RequestEntry>& entries);

  std::unordered_map<std::string, Node> domains_;  // "*" included
  std::vector<std::string> conflicts_;
};

// Whether some request descriptor could reach both paths: same length, and at each level the
// same key with values that can both hold (absent: any; "foo*": starting with foo; else equal).
// A policy of one domain on such a path replaces, in that domain, the "*" policy on the other
// (DescriptorIndex::match tries the domain's own tree first).
bool descriptor_paths_overlap(const std::vector<DescriptorEntry>& a,
                              const std::vector<DescriptorEntry>& b);

// The subject of DescriptorMatch for these entries.
std::string descriptor_subject(const std::vector<RequestEntry>& entries);

}  // namespace sluice::policy
