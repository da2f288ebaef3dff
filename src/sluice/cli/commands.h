// Registration of the `sluice` subcommands. Each adds itself to the CLI11 app and sets the
// process exit code when it runs.
#pragma once

namespace CLI {
class App;
}

namespace sluice::cli {

void add_version_command(CLI::App& app);
void add_acquire_command(CLI::App& app);

// 0 on success; set by the subcommand that ran.
int exit_code();
void set_exit_code(int code);

}  // namespace sluice::cli
