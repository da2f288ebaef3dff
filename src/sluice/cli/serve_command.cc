// `sluice serve`: the decision server and admin API (HTTP/JSON, DESIGN.md §5a; gRPC with
// --grpc-listen) on the in-memory store or on Redis, with policies and accounts in the SQL
// database of --policies. This file is the command's flags only: every setting of app/settings.h
// is a flag, loaded with the config file and the environment by app/settings_loader.h (flags >
// environment (SLUICE_*) > config file (--config) > defaults; `sluice serve --help` and
// docs/server.md list them); app/server.h wires and runs the server. SIGTERM/SIGINT drain it
// gracefully.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sluice/app/server.h"
#include "sluice/app/settings.h"
#include "sluice/app/settings_loader.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/cli/environment.h"

namespace sluice::cli {

std::string_view demo_policies();  // examples/demo-policy.yaml, embedded at build time

namespace {

struct ServeCommand {
  std::string config;
  bool print_config = false;
  std::map<std::string, std::vector<std::string>> flags;  // by setting key
  std::map<std::string, CLI::Option*> options;
};

// What the command prints for its user before it serves (its errors and warnings): its output,
// not a log line.
int fail(const Status& status) {
  print_to_user("serve", status.message());
  return exit_code_for(status.code());
}

int run_serve(const ServeCommand& command) {
  // Signals are taken by sigwait at the end: block them before any thread starts (the policy
  // poller, admin workers, I/O threads), so every thread inherits the mask and a SIGTERM can
  // only reach sigwait, never kill the process from a thread with the default action.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  app::SettingSources sources{.config_file = command.config};
  for (const auto& [key, option] : command.options) {
    if (option->count() > 0) sources.flags[key] = command.flags.at(key);
  }
  StatusOr<app::Settings> settings = app::load_settings(sources);
  if (!settings.ok()) return fail(invalid_argument(settings.status().message()));
  if (command.print_config) {
    std::cout << app::print_settings(*settings);
    return 0;
  }
  if (Status status = app::check_settings(*settings); !status.ok()) return fail(status);
  const std::shared_ptr<const Environment> env = default_environment();
  StatusOr<std::unique_ptr<app::RunningServer>> server = app::RunningServer::start(
      *settings, {.database = {.open_policies = env->open_policies,
                               .open_accounts = env->open_accounts,
                               .default_url = env->default_policies_url},
                  .demo_policies = demo_policies(),
                  .warn = [](std::string_view warning) { print_to_user("serve", warning); }});
  if (!server.ok()) return fail(server.status());
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  (*server)->stop(signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto command = std::make_shared<ServeCommand>();
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Serve rate-limit decisions over HTTP/JSON (default: 127.0.0.1:8080, in-memory store, the "
      "built-in demo policy).\nEvery setting below is also read from the environment (SLUICE_*) "
      "and from a YAML config file (--config, keys as the flags with '_' for '-').\nPrecedence: "
      "flags > environment > config file > defaults. See docs/server.md.");
  serve->add_option("--config", command->config,
                    "YAML config file of settings (env SLUICE_CONFIG)");
  serve->add_flag("--print-config", command->print_config,
                  "Print the effective settings (after precedence) as YAML and exit");
  for (const app::Setting& setting : app::settings()) {
    CLI::Option* option = serve->add_option(app::flag_name(setting), command->flags[setting.key],
                                            app::flag_help(setting));
    if (!setting.list) option->expected(1);
    command->options[setting.key] = option;
  }
  serve->callback([command] { set_exit_code(run_serve(*command)); });
}

}  // namespace sluice::cli
