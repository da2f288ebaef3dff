#include "sluice/store/redis/redis_store.h"

#include <utility>

#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::store {
namespace {

std::vector<std::string> limit_keys(const SubjectRef& ref) {
  std::vector<std::string> keys;
  keys.reserve(ref.limits.size());
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    keys.push_back(redis_limit_key(ref.policy, ref.subject, i));
  }
  return keys;
}

Status unexpected(const redis::Reply& reply) {
  return internal_error("redis store: unexpected script reply " + reply.debug_string());
}

}  // namespace

RedisStore::RedisStore(std::shared_ptr<redis::Client> client, RedisStoreOptions options)
    : client_(std::move(client)),
      options_(options),
      scripts_(std::make_unique<ScriptSet>(options.pinned_clock_for_tests != nullptr)) {}

RedisStore::~RedisStore() = default;

void RedisStore::pin_time(std::vector<std::string>& args) const {
  if (options_.pinned_clock_for_tests != nullptr) {
    args.push_back(std::to_string(options_.pinned_clock_for_tests->now()));
  }
}

StatusOr<StoreDecision> RedisStore::acquire(const SubjectRef& ref, std::int64_t cost) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  if (Status status = algorithm::validate_cost(cost); !status.ok()) return status;
  const std::string lease =
      cost > 0 && algorithm::uses_leases(ref.limits) ? new_lease_id() : std::string();
  std::vector<std::string> args =
      evaluate_arguments(ScriptOperation::kAcquire, ref.limits, cost, lease);
  pin_time(args);
  StatusOr<redis::Reply> reply = client_->eval_script(
      scripts_->get(ScriptOperation::kAcquire, ref.limits), limit_keys(ref), std::move(args));
  if (!reply.ok()) return reply.status();
  StatusOr<std::vector<algorithm::PolicyVerdict>> verdicts = unpack_verdicts(*reply);
  if (!verdicts.ok()) return verdicts.status();
  if (verdicts->size() != 1 || (*verdicts)[0].limit_index >= ref.limits.size()) {
    return unexpected(*reply);
  }
  StoreDecision decision{.verdict = (*verdicts)[0]};
  if (decision.verdict.verdict.allowed && !lease.empty()) decision.lease = lease;
  return decision;
}

StatusOr<bool> RedisStore::lease_operation(const SubjectRef& ref, std::string_view operation,
                                           std::string_view lease) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  std::vector<std::string> keys;
  std::vector<std::string> args = {std::string(operation), std::string(lease)};
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    if (const auto* p = std::get_if<algorithm::Concurrency>(&ref.limits[i])) {
      keys.push_back(redis_limit_key(ref.policy, ref.subject, i));
      args.push_back(std::to_string(p->lease_ttl));
    }
  }
  if (keys.empty()) return false;
  pin_time(args);
  StatusOr<redis::Reply> reply = client_->eval_script(
      scripts_->get(ScriptOperation::kLease, ref.limits), std::move(keys), std::move(args));
  if (!reply.ok()) return reply.status();
  if (!reply->is_integer()) return unexpected(*reply);
  return reply->as_integer() == 1;
}

StatusOr<bool> RedisStore::release(const SubjectRef& ref, std::string_view lease) {
  return lease_operation(ref, "release", lease);
}

StatusOr<bool> RedisStore::renew(const SubjectRef& ref, std::string_view lease) {
  return lease_operation(ref, "renew", lease);
}

StatusOr<std::vector<algorithm::Verdict>> RedisStore::inspect(const SubjectRef& ref) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  std::vector<std::string> args = evaluate_arguments(ScriptOperation::kInspect, ref.limits, 0);
  pin_time(args);
  StatusOr<redis::Reply> reply = client_->eval_script(
      scripts_->get(ScriptOperation::kInspect, ref.limits), limit_keys(ref), std::move(args));
  if (!reply.ok()) return reply.status();
  StatusOr<std::vector<algorithm::PolicyVerdict>> unpacked = unpack_verdicts(*reply);
  if (!unpacked.ok()) return unpacked.status();
  if (unpacked->size() != ref.limits.size()) return unexpected(*reply);
  std::vector<algorithm::Verdict> verdicts;
  for (const algorithm::PolicyVerdict& verdict : *unpacked) verdicts.push_back(verdict.verdict);
  return verdicts;
}

Status RedisStore::reset(const SubjectRef& ref) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  std::vector<std::string> args = {"DEL"};
  for (std::string& key : limit_keys(ref)) args.push_back(std::move(key));
  StatusOr<redis::Reply> reply = client_->execute({.args = std::move(args), .key_index = 1});
  return reply.ok() ? Status{} : reply.status();
}

}  // namespace sluice::store
