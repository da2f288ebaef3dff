// Policy documents in YAML or JSON, as `sluice policy create/import`, the admin API and
// --policy-file read them. Any text is read or refused with errors naming fields; a policy that
// is accepted is written back (JSON and YAML) and reads back as the same policy. The same bytes
// also go through `policy import --format envoy`, which reads YAML apart.
#include <nlohmann/json.hpp>

#include "fuzz/fuzz_input.h"
#include "sluice/policy/document.h"
#include "sluice/policy/envoy_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice;
  const std::string_view text = fuzz::as_text(data, size);
  const policy::EnvoyImport envoy = policy::import_envoy_config(text);
  fuzz::require(envoy.errors.empty() || envoy.policies.empty(),
                "an envoy configuration with errors imports nothing");
  const policy::ParsedPolicies parsed = policy::policies_from_text(text);
  fuzz::require(parsed.errors.empty() || !policy::join_errors(parsed.errors).empty(),
                "errors are described");
  if (!parsed.errors.empty()) return 0;
  for (const policy::Policy& read : parsed.policies) {
    const nlohmann::json written = policy::policy_to_json(read);
    for (const std::string& text : {written.dump(), policy::json_to_yaml(written)}) {
      const policy::ParsedPolicy again = policy::policy_from_text(text);
      fuzz::require(again.errors.empty(), "a written policy reads back without errors");
      fuzz::require(policy::policy_to_json(*again.policy) == written,
                    "a written policy reads back the same");
    }
  }
  return 0;
}
