// Policy documents written: the JSON of a policy and of a limit, as the API answers and
// `sluice policy get|export` prints (as YAML through json_to_yaml).
#include <nlohmann/json.hpp>

#include "sluice/algorithm/catalogue.h"
#include "sluice/core/duration.h"
#include "sluice/policy/defence_fields.h"
#include "sluice/policy/document.h"
#include "sluice/policy/quota_document.h"

namespace sluice::policy {

using algorithm::Limit;
using nlohmann::json;

json limit_to_json(const Limit& limit) {
  const algorithm::Algorithm& row = algorithm::algorithm_of(limit);
  json out = {{"algorithm", row.name}};
  const auto values = algorithm::parameter_values(limit);
  for (std::size_t i = 0; i < row.parameters.size(); ++i) {
    const algorithm::Parameter& parameter = row.parameters[i];
    if (!values[i]) continue;  // an optional parameter left unset
    const std::string name(parameter.name);
    switch (parameter.type) {
      case algorithm::ParameterType::kCount:
        out[name] = *values[i];
        break;
      case algorithm::ParameterType::kDuration:
        out[name] = format_duration(*values[i]);
        break;
      case algorithm::ParameterType::kChoice:
        out[name] = parameter.choices[static_cast<std::size_t>(*values[i])];
        break;
    }
  }
  if (const algorithm::Calendar* calendar = algorithm::calendar_of(limit)) {
    calendar_to_json(*calendar, out);
  }
  return out;
}

json policy_to_json(const Policy& policy) {
  json limits = json::array();
  for (const Limit& limit : policy.limits) limits.push_back(limit_to_json(limit));
  json document = {{"name", policy.name},
                   {"description", policy.description},
                   {"apps", policy.apps},
                   {"mode", mode_name(policy.mode)},
                   {"on_store_failure", failure_mode_name(policy.on_store_failure)},
                   {"enabled", policy.enabled},
                   {"limits", limits},
                   {"version", policy.version},
                   {"created_by", policy.created_by},
                   {"updated_by", policy.updated_by},
                   {"created_at", policy.created_at},
                   {"updated_at", policy.updated_at}};
  if (policy.descriptors) document["descriptors"] = descriptor_section_to_json(*policy.descriptors);
  // Only when set, so documents of policies that never charge stay as they were.
  if (policy.max_debt != 0) document["max_debt"] = policy.max_debt;
  write_defence_fields(policy, document);
  if (policy.lease_tokens != 0) document["lease_tokens"] = policy.lease_tokens;
  if (policy.lease_period != kDefaultLeasePeriod) {
    document["lease_period"] = format_duration(policy.lease_period);
  }
  if (policy.penalty) document["penalty"] = penalty_to_json(*policy.penalty);
  if (policy.retry_jitter_percent != 0) {
    document["retry_jitter"] = std::to_string(policy.retry_jitter_percent) + "%";
  }
  return document;
}

}  // namespace sluice::policy
