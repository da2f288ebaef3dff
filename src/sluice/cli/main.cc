// The `sluice` command: one subcommand per job (DESIGN.md §5a). Each subcommand lives in its own
// file and registers itself here.
#include <CLI/CLI.hpp>
#include <iostream>

#include "sluice/cli/commands.h"
#include "sluice/cli/environment.h"

int main(int argc, char** argv) {
  CLI::App app{"Sluice: distributed rate limiting with exact algorithms on Redis or in process."};
  app.require_subcommand(1);
  const auto env = sluice::cli::default_environment(std::cin, std::cout, std::cerr);
  sluice::cli::add_version_command(app);
  sluice::cli::add_acquire_command(app, env);
  sluice::cli::add_quota_commands(app, env);
  sluice::cli::add_serve_command(app, env);
  sluice::cli::add_bench_command(app, env);
  sluice::cli::add_policy_command(app, env);
  sluice::cli::add_admin_command(app, env);
  sluice::cli::add_simulate_command(app, env);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and friends exit 0; every usage error exits 2 (docs/cli.md), not CLI11's 100+.
    return app.exit(error) == 0 ? 0 : 2;
  }
  return sluice::cli::exit_code();
}
