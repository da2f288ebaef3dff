// `sluice serve`: the decision server and admin API (HTTP/JSON, DESIGN.md §5a; gRPC with
// --grpc-listen) on the in-memory store or on Redis, with policies and accounts in the SQL
// database of --policies. This file is the command's flags only: every setting of app/settings.h
// is a flag, loaded with the config file and the environment by app/settings_loader.h (flags >
// environment (SLUICE_*) > config file (--config) > defaults; `sluice serve --help` and
// docs/server.md list them); app/server.h wires and runs the server. SIGTERM/SIGINT drain it
// gracefully.
#include <signal.h>

#include <CLI/CLI.hpp>
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
#include "sluice/core/status_macros.h"

namespace sluice::cli {

std::string_view demo_policies();  // examples/demo-policy.yaml, embedded at build time

namespace {

struct ServeCommand {
  std::string config;
  bool print_config = false;
  std::map<std::string, std::vector<std::string>> flags;  // by setting key
  std::map<std::string, CLI::Option*> options;
};

Status run_serve(const Run& run, const ServeCommand& command) {
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
  SLUICE_ASSIGN_OR_RETURN(const app::Settings settings,
                          invalid_input("", app::load_settings(sources)));
  if (command.print_config) {
    run.out() << app::print_settings(settings);
    return {};
  }
  SLUICE_RETURN_IF_ERROR(app::check_settings(settings));
  const Environment& env = run.env();
  SLUICE_ASSIGN_OR_RETURN(
      const std::unique_ptr<app::RunningServer> server,
      app::RunningServer::start(settings,
                                {.database = {.open_policies = env.open_policies,
                                              .open_accounts = env.open_accounts,
                                              .default_url = env.default_policies_url},
                                 .demo_policies = demo_policies(),
                                 .warn = [&run](std::string_view warning) { run.warn(warning); }}));
  int signal_number = 0;
  sigwait(&signals, &signal_number);
  server->stop(signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  return {};
}

}  // namespace

void add_serve_command(CLI::App& app, std::shared_ptr<const Environment> env) {
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
  serve->callback([env, command] {
    const Run run(*env, "serve");
    env->exit(run.finish(run_serve(run, *command)));
  });
}

}  // namespace sluice::cli
