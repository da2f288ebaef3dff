// `sluice acquire`: decide requests against a policy, on the in-memory store or on Redis
// (--redis URL), through the same Limiter the server uses, and print each decision.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sluice/algorithm/validate.h"
#include "sluice/cli/backend_at_start.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"
#include "sluice/service/decision.h"
#include "sluice/service/limiter.h"
#include "sluice/wire/decision_json.h"

namespace sluice::cli {
namespace {

struct AcquireOptions {
  std::string policy_file;
  std::string key;
  std::string app = "cli";
  std::int64_t cost = 1;
  int count = 1;
  bool json = false;
  std::string redis_url;  // empty: in-memory store
};

std::string describe(const service::Decision& d) {
  const algorithm::Verdict& v = d.verdict;
  std::ostringstream out;
  out << (v.allowed ? "allowed" : "denied ") << "  remaining=" << v.remaining << "/" << v.limit
      << "  reset_after=" << service::millis_rounded_up(v.reset_after) << "ms";
  if (v.retry_after) out << "  retry_after=" << service::millis_rounded_up(*v.retry_after) << "ms";
  if (!v.allowed && !v.retry_after) out << "  (cost exceeds what the limit can ever grant)";
  if (v.delay) out << "  delay=" << service::millis_rounded_up(*v.delay) << "ms";
  if (d.lease) out << "  lease=" << *d.lease;
  if (d.degraded) out << "  DEGRADED (store unreachable: decided by on_store_failure)";
  if (d.shadow_denied) out << "  (shadow: would be denied)";
  out << "  limit_index=" << d.limit_index;
  return out.str();
}

Status run_acquire(const Run& run, const AcquireOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(policy::Policy read, read_policy_file(options.policy_file));
  const auto policy = std::make_shared<const policy::Policy>(std::move(read));
  SLUICE_ASSIGN_OR_RETURN(
      const std::unique_ptr<service::Backend> backend,
      open_backend_at_start(run, options.redis_url, {.url_name = "--redis"},
                            "deciding by the policy's on_store_failure: " +
                                std::string(policy::failure_mode_name(policy->on_store_failure))));
  for (int i = 0; i < options.count; ++i) {
    SLUICE_ASSIGN_OR_RETURN(const service::Decision decision,
                            decision_error(backend->limiter
                                               ->block_on({.app = options.app,
                                                           .held = policy,
                                                           .subject = options.key,
                                                           .cost = options.cost})
                                               .decision));
    if (options.json) {
      run.out() << wire::decision_json(decision) << "\n";
    } else {
      run.out() << "#" << (i + 1) << "  " << describe(decision) << "\n";
    }
  }
  return {};
}

}  // namespace

void add_acquire_command(CLI::App& app, std::shared_ptr<const Environment> env) {
  auto options = std::make_shared<AcquireOptions>();
  CLI::App* command =
      app.add_subcommand("acquire", "Ask for permission under a policy and print the decision(s)");
  command->add_option("--policy-file", options->policy_file, "Policy document (YAML or JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--key", options->key, "Subject being limited (user id, IP, API key...)")
      ->required();
  command->add_option("--app", options->app, "Calling app; the policy must list it or \"*\"");
  command->add_option("--cost", options->cost, "Units this request consumes (0 peeks)")
      ->check(CLI::Range(std::int64_t{0}, algorithm::kMaxCost));
  command->add_option("--count", options->count, "Repeat the request this many times")
      ->check(CLI::Range(1, 1'000'000));
  command->add_flag("--json", options->json, "One JSON decision per line");
  command->add_option(
      "--redis", options->redis_url,
      "Decide on Redis: redis://[user:pass@]host:port/db, redis+cluster://h1:p1,h2:p2, "
      "redis+sentinel://s1:p1,s2:p2/MASTER, rediss… for TLS (default: in memory)");
  command->callback([env, options] {
    const Run run(*env, "acquire");
    env->exit(run.finish(run_acquire(run, *options)));
  });
}

}  // namespace sluice::cli
