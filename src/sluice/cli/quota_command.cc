// `sluice charge`, `sluice refund`, `sluice reserve` and `sluice settle`: the quota operations
// (docs/quotas.md) on one subject of a policy, on the in-memory store or on Redis (--redis URL),
// through the same Limiter the server uses, printing the decision with its balance.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sluice/algorithm/validate.h"
#include "sluice/cli/backend_at_start.h"
#include "sluice/cli/command_support.h"
#include "sluice/cli/commands.h"
#include "sluice/core/duration.h"
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

constexpr std::string_view kVerbs[] = {"charge", "refund", "reserve", "settle"};
constexpr std::string_view kDone[] = {"charged ", "refunded", "reserved", "settled "};

std::string describe(const service::Decision& d, store::QuotaOperation operation) {
  const algorithm::Verdict& v = d.verdict;
  std::ostringstream out;
  out << (v.allowed ? kDone[static_cast<std::size_t>(operation)] : "refused ")
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

int run_quota(const QuotaOptions& options, store::QuotaOperation operation) {
  const std::string verb(kVerbs[static_cast<std::size_t>(operation)]);
  const std::string command = "sluice " + verb;
  Micros ttl = 0;
  if (operation == store::QuotaOperation::kReserve) {
    StatusOr<Micros> parsed = parse_duration(options.ttl);
    if (!parsed.ok()) {
      print_to_user(verb, "--ttl: " + parsed.status().message());
      return 2;
    }
    ttl = *parsed;
  }
  std::ifstream file(options.policy_file);
  if (!file) {
    print_to_user(verb, "cannot read --policy-file " + options.policy_file);
    return 2;
  }
  std::stringstream text;
  text << file.rdbuf();
  policy::ParsedPolicy parsed = policy::policy_from_text(text.str());
  if (!parsed.policy) {
    print_to_user(verb, "invalid policy in " + options.policy_file + ": " +
                            policy::join_errors(parsed.errors));
    return 2;
  }
  const std::string name = parsed.policy->name;
  const service::StaticPolicyLookup lookup({*std::move(parsed.policy)});
  BackendAtStart opened = open_backend_at_start(
      verb, options.redis_url, {.url_name = "--redis", .limiter = {.policies = &lookup}},
      "charges and refunds fail until it answers");
  if (opened.exit_code != 0) return opened.exit_code;
  service::Limiter& limiter = *opened.backend->limiter;
  StatusOr<service::Decision> result = limiter
                                           .block_on({.app = options.app,
                                                      .policy = name,
                                                      .operation = service::operation_of(operation),
                                                      .subject = options.key,
                                                      .cost = options.cost,
                                                      .reservation = options.reservation,
                                                      .reservation_ttl = ttl})
                                           .decision;
  if (!result.ok()) {
    std::cerr << command << ": " << result.status().to_string() << "\n";
    return result.status().code() == StatusCode::kNotFound ? 3 : 2;
  }
  if (options.json) {
    std::cout << wire::decision_json(*result) << "\n";
  } else {
    std::cout << describe(*result, operation) << "\n";
  }
  return 0;
}

void add_quota_command(CLI::App& app, store::QuotaOperation operation) {
  static constexpr std::string_view kHelp[] = {
      "Charge units after the fact (may go into debt down to the policy's max_debt)",
      "Give units back (capped at each limit's size)",
      "Reserve an estimate: charged now, settled later with the actual cost (needs --redis to "
      "outlive the command)",
      "Settle a reservation with the actual cost: the difference is charged or refunded"};
  const auto index = static_cast<std::size_t>(operation);
  auto options = std::make_shared<QuotaOptions>();
  CLI::App* command = app.add_subcommand(std::string(kVerbs[index]), std::string(kHelp[index]));
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
  command->callback([options, operation] { set_exit_code(run_quota(*options, operation)); });
}

}  // namespace

void add_quota_commands(CLI::App& app) {
  add_quota_command(app, store::QuotaOperation::kCharge);
  add_quota_command(app, store::QuotaOperation::kRefund);
  add_quota_command(app, store::QuotaOperation::kReserve);
  add_quota_command(app, store::QuotaOperation::kSettle);
}

}  // namespace sluice::cli
