#include "sluice/version.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

#include "sluice/cli/commands.h"

namespace sluice::cli {
namespace {
int g_exit_code = 0;
}  // namespace

int exit_code() { return g_exit_code; }
void set_exit_code(int code) { g_exit_code = code; }

void add_version_command(CLI::App& app) {
  app.set_version_flag("--version", std::string("sluice ") + SLUICE_VERSION);
  CLI::App* command = app.add_subcommand("version", "Print the Sluice version");
  command->callback([] { std::cout << "sluice " << SLUICE_VERSION << "\n"; });
}

}  // namespace sluice::cli
