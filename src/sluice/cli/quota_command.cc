// `sluice charge`, `sluice refund`, `sluice reserve` and `sluice settle`: the quota operations
// (docs/quotas.md) on one subject of a policy, on the in-memory store or on Redis (--redis URL),
// through the same Limiter the server uses, printing the decision with its balance.
#include <CLI/CLI.hpp>
#include <sstream>

#include "sluice/algorithm/validate.h"
#include "sluice/cli/backend_at_start.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/core/duration.h"
#include "sluice/core/status_macros.h"
#include "sluice/policy/document.h"
#include "sluice/service/decision.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/wire/decision_json.h"

namespace sluice::cli {
namespace {

struct QuotaOptions {
  std::string policy_file;
  std::string key;
  std::string app = "cli";
  std::int64_t cost = 0;
  bool json = false;
  std::string redis_url;    // empty: in-memory store (the state ends with the command)
  std::string ttl = "60s";  // reserve
  std::string reservation;  // settle
};

// One row per store::QuotaOperation, in its order: the word a decision that went through starts
// with (padded to one width), and the help. The subcommand is the operation's name
// (service::operation_name).
struct QuotaCommand {
  std::string_view done;
  std::string_view help;
};
constexpr QuotaCommand kQuotaCommands[] = {
    {"charged ", "Charge units after the fact (may go into debt down to the policy's max_debt)"},
    {"refunded", "Give units back (capped at each limit's size)"},
    {"reserved",
     "Reserve an estimate: charged now, settled later with the actual cost (needs --redis to "
     "outlive the command)"},
    {"settled ",
     "Settle a reservation with the actual cost: the difference is charged or refunded"},
};

const QuotaCommand& command_of(store::QuotaOperation operation) {
  return kQuotaCommands[static_cast<std::size_t>(operation)];
}

std::string describe(const service::Decision& d, store::QuotaOperation operation) {
  const algorithm::Verdict& v = d.verdict;
  std::ostringstream out;
  out << (v.allowed ? command_of(operation).done : "refused ")
      << "  balance=" << v.balance.value_or(0) << "/" << v.limit
      << "  reset_after=" << service::millis_rounded_up(v.reset_after) << "ms";
  if (!v.allowed && v.retry_after) {
    out << "  retry_after=" << service::millis_rounded_up(*v.retry_after) << "ms";
  }
  if (!v.allowed && !v.retry_after) out << "  (more than the limit plus max_debt)";
  if (d.shadow_denied) out << "  (shadow: would be refused; nothing charged)";
  if (d.reservation) out << "  reservation=" << *d.reservation;
  out << "  limit_index=" << d.limit_index;
  return out.str();
}

Status run_quota(const Run& run, const QuotaOptions& options, store::QuotaOperation operation) {
  Micros ttl = 0;
  if (operation == store::QuotaOperation::kReserve) {
    SLUICE_ASSIGN_OR_RETURN(ttl, invalid_input("--ttl: ", parse_duration(options.ttl)));
  }
  SLUICE_ASSIGN_OR_RETURN(policy::Policy policy, read_policy_file(options.policy_file));
  const std::string name = policy.name;
  const service::StaticPolicyLookup lookup({std::move(policy)});
  SLUICE_ASSIGN_OR_RETURN(
      const std::unique_ptr<service::Backend> backend,
      open_backend_at_start(run, options.redis_url,
                            {.url_name = "--redis", .limiter = {.policies = &lookup}},
                            "charges and refunds fail until it answers"));
  SLUICE_ASSIGN_OR_RETURN(
      const service::Decision decision,
      decision_error(backend->limiter
                         ->block_on({.app = options.app,
                                     .policy = name,
                                     .operation = service::operation_of(operation),
                                     .subject = options.key,
                                     .cost = options.cost,
                                     .reservation = options.reservation,
                                     .reservation_ttl = ttl})
                         .decision));
  if (options.json) {
    run.out() << wire::decision_json(decision) << "\n";
  } else {
    run.out() << describe(decision, operation) << "\n";
  }
  return {};
}

void add_quota_command(CLI::App& app, const std::shared_ptr<const Environment>& env,
                       store::QuotaOperation operation) {
  auto options = std::make_shared<QuotaOptions>();
  CLI::App* command =
      app.add_subcommand(std::string(service::operation_name(service::operation_of(operation))),
                         std::string(command_of(operation).help));
  command->add_option("--policy-file", options->policy_file, "Policy document (YAML or JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--key", options->key, "Subject (user id, API key, tenant...)")->required();
  command
      ->add_option("--cost", options->cost,
                   operation == store::QuotaOperation::kReserve  ? "The estimate"
                   : operation == store::QuotaOperation::kSettle ? "The actual cost"
                                                                 : "Units (0 shows the balance)")
      ->required()
      ->check(CLI::Range(std::int64_t{0}, algorithm::kMaxCost));
  if (operation == store::QuotaOperation::kReserve) {
    command->add_option("--ttl", options->ttl,
                        "How long the reservation may be settled (default 60s; at most 7d)");
  }
  if (operation == store::QuotaOperation::kSettle) {
    command->add_option("--reservation", options->reservation, "The id reserve printed")
        ->required();
  }
  command->add_option("--app", options->app, "Calling app; the policy must list it or \"*\"");
  command->add_flag("--json", options->json, "Print the decision as JSON");
  command->add_option("--redis", options->redis_url,
                      "On Redis: redis://[user:pass@]host:port/db (default: in memory, which "
                      "forgets the balance when the command ends)");
  command->callback([env, options, operation] {
    const Run run(*env, std::string(service::operation_name(service::operation_of(operation))));
    env->exit(run.finish(run_quota(run, *options, operation)));
  });
}

}  // namespace

void add_quota_commands(CLI::App& app, std::shared_ptr<const Environment> env) {
  add_quota_command(app, env, store::QuotaOperation::kCharge);
  add_quota_command(app, env, store::QuotaOperation::kRefund);
  add_quota_command(app, env, store::QuotaOperation::kReserve);
  add_quota_command(app, env, store::QuotaOperation::kSettle);
}

}  // namespace sluice::cli
