// `sluice charge` and `sluice refund`: the quota operations (docs/quotas.md) on one subject of a
// policy, on the in-memory store or on Redis (--redis URL), through the same Limiter the server
// uses, printing the decision with its balance.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sluice/algorithm/validate.h"
#include "sluice/cli/commands.h"
#include "sluice/cli/redis_at_start.h"
#include "sluice/core/clock.h"
#include "sluice/policy/document.h"
#include "sluice/service/decision.h"
#include "sluice/service/decision_json.h"
#include "sluice/service/limiter.h"
#include "sluice/service/policy_lookup.h"
#include "sluice/store/memory/memory_store.h"
#include "sluice/store/redis/redis_store.h"

namespace sluice::cli {
namespace {

struct QuotaOptions {
  std::string policy_file;
  std::string key;
  std::string app = "cli";
  std::int64_t cost = 0;
  bool json = false;
  std::string redis_url;  // empty: in-memory store (the state ends with the command)
};

std::string describe(const service::Decision& d, bool charging) {
  const algorithm::Verdict& v = d.verdict;
  std::ostringstream out;
  out << (v.allowed ? (charging ? "charged " : "refunded") : "refused ")
      << "  balance=" << v.balance.value_or(0) << "/" << v.limit
      << "  reset_after=" << service::millis_rounded_up(v.reset_after) << "ms";
  if (!v.allowed && v.retry_after) {
    out << "  retry_after=" << service::millis_rounded_up(*v.retry_after) << "ms";
  }
  if (!v.allowed && !v.retry_after) out << "  (more than the limit plus max_debt)";
  if (d.shadow_denied) out << "  (shadow: would be refused; nothing charged)";
  out << "  limit_index=" << d.limit_index;
  return out.str();
}

int run_quota(const QuotaOptions& options, store::QuotaOperation operation) {
  const bool charging = operation == store::QuotaOperation::kCharge;
  const std::string command = charging ? "sluice charge" : "sluice refund";
  std::ifstream file(options.policy_file);
  if (!file) {
    std::cerr << command << ": cannot read --policy-file " << options.policy_file << "\n";
    return 2;
  }
  std::stringstream text;
  text << file.rdbuf();
  policy::ParsedPolicy parsed = policy::policy_from_text(text.str());
  if (!parsed.policy) {
    std::cerr << command << ": invalid policy in " << options.policy_file << ": "
              << policy::join_errors(parsed.errors) << "\n";
    return 2;
  }
  const std::string name = parsed.policy->name;
  const service::StaticPolicyLookup lookup({*std::move(parsed.policy)});
  store::MemoryStore memory(SystemClock::instance());
  std::unique_ptr<store::RedisStore> redis;
  if (!options.redis_url.empty()) {
    RedisAtStart opened =
        open_redis_at_start(charging ? "charge" : "refund", "--redis", options.redis_url, {},
                            "charges and refunds fail until it answers");
    if (opened.exit_code != 0) return opened.exit_code;
    redis = std::move(opened.store);
  }
  service::Limiter limiter(redis ? static_cast<store::Store&>(*redis) : memory, &memory,
                           {.policies = &lookup});
  StatusOr<service::Decision> result = limiter.apply_quota_blocking({.app = options.app,
                                                                     .policy = name,
                                                                     .subject = options.key,
                                                                     .operation = operation,
                                                                     .cost = options.cost});
  if (!result.ok()) {
    std::cerr << command << ": " << result.status().to_string() << "\n";
    return result.status().code() == StatusCode::kNotFound ? 3 : 2;
  }
  if (options.json) {
    std::cout << service::decision_json(*result) << "\n";
  } else {
    std::cout << describe(*result, charging) << "\n";
  }
  return 0;
}

void add_quota_command(CLI::App& app, store::QuotaOperation operation) {
  const bool charging = operation == store::QuotaOperation::kCharge;
  auto options = std::make_shared<QuotaOptions>();
  CLI::App* command = app.add_subcommand(
      charging ? "charge" : "refund",
      charging ? "Charge units after the fact (may go into debt down to the policy's max_debt)"
               : "Give units back (capped at each limit's size)");
  command->add_option("--policy-file", options->policy_file, "Policy document (YAML or JSON)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--key", options->key, "Subject (user id, API key, tenant...)")->required();
  command->add_option("--cost", options->cost, "Units to charge or refund (0 shows the balance)")
      ->required()
      ->check(CLI::Range(std::int64_t{0}, algorithm::kMaxCost));
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
}

}  // namespace sluice::cli
