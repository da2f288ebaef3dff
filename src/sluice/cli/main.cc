// The `sluice` command: one subcommand per job (DESIGN.md §5a). Each subcommand lives in its own
// file and registers itself here.
#include <CLI/CLI.hpp>

#include "sluice/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Sluice: distributed rate limiting with exact algorithms on Redis or in process."};
  app.require_subcommand(1);
  sluice::cli::add_version_command(app);
  sluice::cli::add_acquire_command(app);
  CLI11_PARSE(app, argc, argv);
  return sluice::cli::exit_code();
}
