// The one loader of `sluice serve`'s settings (settings.h): defaults, then a YAML config file,
// then the environment (SLUICE_*), then flags — each later source overriding the earlier ones,
// every value read by the same Setting::set and every error naming where it came from (the
// file and key, the variable, or the flag). Also the text the settings are shown as: the help
// line of each flag and --print-config's YAML, with secrets masked.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sluice/app/settings.h"
#include "sluice/status.h"

namespace sluice::app {

// Reads one environment variable: nullopt when unset.
using EnvironmentReader = std::function<std::optional<std::string>(const std::string& name)>;

// The process's own environment (std::getenv).
EnvironmentReader process_environment();

struct SettingSources {
  // A YAML map of setting keys (policy_file may be a list; relative policy paths are relative to
  // the file's directory). Empty: the file SLUICE_CONFIG names, if any.
  std::string config_file;
  EnvironmentReader environment = process_environment();
  // The values of the flags given, by setting key (several for a repeated list flag).
  std::map<std::string, std::vector<std::string>> flags;
};

// The settings `sources` make, lowest precedence first: defaults < config file < environment <
// flags. A list setting named by a source replaces what the sources before it gave. Errors:
// InvalidArgument "config file PATH: KEY: ...", "SLUICE_KEY: ..." or "--key: ...".
StatusOr<Settings> load_settings(const SettingSources& sources);

// `setting`'s help with its environment variable, file key and default, as --help shows it.
std::string flag_help(const Setting& setting);

// The settings as YAML, one key per line in table order (--print-config). Secrets are masked
// (issue 32, L4: the output ends up in terminals, tickets and CI logs): URLs keep everything but
// their password, and a secret setting shows only whether it is set.
std::string print_settings(const Settings& settings);

}  // namespace sluice::app
