// Runs `sluice policy|admin|simulate ...` in process against in-memory fakes, capturing the exit
// code and both output streams, for policy_command_test.cc, admin_command_test.cc and
// simulate_command_test.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/cli/commands.h"
#include "sluice/cli/environment.h"
#include "sluice/core/clock.h"
#include "testing/fake_repositories.h"

namespace sluice::cli {

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

class CliHarness {
 public:
  static constexpr Micros kEpoch = 1'700'000'000'000'000;

  // `args` without the program name, e.g. {"policy", "get", "orders"}.
  CliResult run(std::vector<std::string> args, const std::string& input = "") {
    std::istringstream in(input);
    std::ostringstream out;
    std::ostringstream err;
    CliResult result;
    auto env = std::make_shared<Environment>();
    env->open_policies =
        [this](const std::string& url) -> StatusOr<std::shared_ptr<policy::PolicyRepository>> {
      opened_url = url;
      if (!open_failure.ok()) return open_failure;
      return std::shared_ptr<policy::PolicyRepository>(policies);
    };
    env->open_accounts =
        [this](const std::string& url) -> StatusOr<std::shared_ptr<auth::AccountRepository>> {
      opened_url = url;
      if (!open_failure.ok()) return open_failure;
      return std::shared_ptr<auth::AccountRepository>(accounts);
    };
    env->clock = &clock;
    env->in = &in;
    env->out = &out;
    env->err = &err;
    env->login = "tester";
    env->default_policies_url = "sqlite:///home/tester/.local/share/sluice/policies.db";
    env->exit = [&result](int code) { result.code = code; };

    CLI::App app{"sluice"};
    app.require_subcommand(1);
    add_policy_command(app, env);
    add_admin_command(app, env);
    add_simulate_command(app, env);
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    try {
      app.parse(args);
    } catch (const CLI::ParseError& error) {
      result.code = app.exit(error, out, err) == 0 ? 0 : 2;
    }
    result.out = out.str();
    result.err = err.str();
    return result;
  }

  ManualClock clock{kEpoch};
  std::shared_ptr<test::FakePolicyRepository> policies =
      std::make_shared<test::FakePolicyRepository>(&clock);
  std::shared_ptr<test::FakeAccountRepository> accounts =
      std::make_shared<test::FakeAccountRepository>();
  Status open_failure;
  std::string opened_url;
};

}  // namespace sluice::cli
