// Conversion of an envoyproxy/ratelimit configuration (its YAML file format) into Sluice
// policies: a pure function from text to {policies, warnings, errors}, so `sluice policy import
// --format envoy` and the admin API can show exactly what would change before anything does.
//
// Mapping (docs/envoy.md and docs/cli.md have the user-facing version):
//   domain                       -> the app every policy of the file lists (sanitized)
//   descriptor with rate_limit   -> one policy whose `descriptors` section is the node's path
//                                   (key with value, or key alone when it has none), so the gRPC
//                                   front end matches it exactly as envoyproxy/ratelimit does;
//                                   one fixed_window limit of requests_per_unit per unit (second,
//                                   minute, hour, day, week; month as 30 days and year as 365
//                                   days, as envoyproxy/ratelimit counts them); windows are
//                                   epoch-aligned in both systems
//   nested descriptors           -> one policy per descriptor that has a rate_limit, at any depth
//   wildcard value ("foo*")      -> the same value in the descriptors section: a prefix match
//   rate_limit.unlimited: true   -> a policy with descriptors.unlimited and no limits
//   detailed_metric: true        -> descriptors.detailed_metric (with a warning: metrics stay
//                                   per policy)
//   policy name                  -> "<domain>.<key>[_<value>].<key>[_<value>]..." (envoy's own
//                                   stats key), every character outside [A-Za-z0-9._-] replaced
//                                   by '_'
//   shadow_mode: true            -> mode: shadow
//   rate_limit.name              -> kept in the description
//
// Nothing is dropped silently. What Sluice cannot represent is a warning naming the field —
// `replaces`, unknown fields, descriptors with
// nothing to limit. What makes the file unusable — bad YAML, a missing domain or key, a bad unit
// or requests_per_unit, two descriptors mapping to one policy name — is an error, and then no
// policies are returned.
#pragma once

#include <string_view>
#include <vector>

#include "sluice/policy/document.h"
#include "sluice/policy/policy.h"

namespace sluice::policy {

struct EnvoyImport {
  std::vector<Policy> policies;      // empty when errors is not
  std::vector<FieldError> warnings;  // config the policies do not represent
  std::vector<FieldError> errors;    // config that prevents the import
};

// Fields are paths into the file: "descriptors[0].descriptors[1].rate_limit.unit"; with
// several YAML documents ("---") each path starts with the document's index: "[1].domain".
EnvoyImport import_envoy_config(std::string_view yaml_text);

}  // namespace sluice::policy
