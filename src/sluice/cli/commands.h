// Registration of the `sluice` subcommands. Each adds itself to the CLI11 app, writes to the
// streams of its Environment and hands its exit code to Environment::exit when it runs.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace sluice::cli {

struct Environment;  // environment.h

void add_version_command(CLI::App& app);
void add_acquire_command(CLI::App& app, std::shared_ptr<const Environment> env);
// `sluice charge`, `refund`, `reserve` and `settle` (quota_command.cc).
void add_quota_commands(CLI::App& app, std::shared_ptr<const Environment> env);
void add_serve_command(CLI::App& app, std::shared_ptr<const Environment> env);
void add_bench_command(CLI::App& app, std::shared_ptr<const Environment> env);
// `sluice policy ...` and `sluice admin ...` (policy_command.cc, admin_command.cc).
void add_policy_command(CLI::App& app, std::shared_ptr<const Environment> env);
void add_admin_command(CLI::App& app, std::shared_ptr<const Environment> env);
// `sluice simulate`: back-testing (simulate_command.cc, docs/backtesting.md).
void add_simulate_command(CLI::App& app, std::shared_ptr<const Environment> env);

// 0 on success; set by the subcommand that ran.
int exit_code();
void set_exit_code(int code);

}  // namespace sluice::cli
