// Conversion of an envoyproxy/ratelimit configuration (its YAML file format) into Sluice
// policies: a pure function from text to {policies, warnings, errors}, so `sluice policy import
// --format envoy` and the admin API can show exactly what would change before anything does.
//
// Mapping (docs/envoy.md and docs/cli.md have the user-facing version). Every policy answers as
// envoyproxy/ratelimit does (descriptors.answers: envoy) and counts as it does (denied_cost):
//   domain                       -> the app every policy of the file lists (sanitized)
//   descriptor with rate_limit   -> one policy whose `descriptors` section is the node's path
//                                   (key with value, or key alone when it has none), so the gRPC
//                                   front end matches it exactly as envoyproxy/ratelimit does;
//                                   one fixed_window limit of requests_per_unit per unit (second,
//                                   minute, hour, day, week; month as 30 days and year as 365
//                                   days, as envoyproxy/ratelimit counts them); windows are
//                                   epoch-aligned in both systems; denied hits counted
//                                   (denied_cost: counted) unless the options say otherwise
//   requests_per_unit: 0         -> a window of 0 that counts denials: every request is over
//   nested descriptors           -> one policy per descriptor that has a rate_limit, at any depth
//   wildcard value ("foo*", "/api/*/edit") -> the same value: each '*' any run of characters
//   share_threshold: true        -> descriptors.entries[].shared on that level
//   rate_limit.unlimited: true   -> a policy with descriptors.unlimited and no limits
//   rate_limit.name / replaces   -> descriptors.name / descriptors.replaces
//   shadow_mode: true            -> mode: shadow
//   detailed_metric, value_to_metric -> detailed_metric kept; both warn (metrics stay per
//                                   policy: their per-value stats series differ)
//   quota_mode: true             -> mode: shadow, with a warning (no dynamic_metadata flag)
//   metadata                     -> dropped, with a warning (sent only in dynamic_metadata)
//   policy name                  -> "<domain>.<key>[_<value>].<key>[_<value>]..." (envoy's own
//                                   stats key), every character outside [A-Za-z0-9._-] replaced
//                                   by '_'
//
// Nothing is dropped silently. What Sluice answers differently is a warning naming the field
// (the CLI imports nothing then without --allow-lossy). What envoyproxy/ratelimit itself refuses
// or Sluice cannot import — bad YAML, unknown fields, a missing domain or key, a bad unit or
// requests_per_unit, a unit with unlimited, share_threshold without a wildcard, a bad
// replaces, two descriptors mapping to one policy name — is an error, and then no policies are
// returned.
#pragma once

#include <string_view>
#include <vector>

#include "sluice/algorithm/limit.h"
#include "sluice/policy/document.h"
#include "sluice/policy/policy.h"

namespace sluice::policy {

struct EnvoyImportOptions {
  // What a denied hit costs the imported windows: counted, as envoyproxy/ratelimit does by
  // default, or free, its STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT (`policy import
  // --stop-cache-key-increment-when-overlimit`). A requests_per_unit of 0 always counts.
  algorithm::DeniedCost denied_cost = algorithm::DeniedCost::kCounted;
};

struct EnvoyImport {
  std::vector<Policy> policies;      // empty when errors is not
  std::vector<FieldError> warnings;  // config the policies do not represent
  std::vector<FieldError> errors;    // config that prevents the import
};

// Fields are paths into the file: "descriptors[0].descriptors[1].rate_limit.unit"; with
// several YAML documents ("---") each path starts with the document's index: "[1].domain".
EnvoyImport import_envoy_config(std::string_view yaml_text, EnvoyImportOptions options = {});

}  // namespace sluice::policy
