#include "sluice/store/redis/redis_store.h"

#include <type_traits>
#include <utility>

#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::store {
namespace {

using algorithm::Limit;

// The five ARGV values common.lua's read_limit takes for one limit: kind and four parameters.
void append_limit(const Limit& limit, std::vector<std::string>& args) {
  args.push_back(std::to_string(script_kind(limit)));
  const auto add = [&](std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
    for (std::int64_t value : {a, b, c, d}) args.push_back(std::to_string(value));
  };
  std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, algorithm::TokenBucket>) {
          add(p.capacity, p.refill, p.period, p.initial.value_or(-1));
        } else if constexpr (std::is_same_v<P, algorithm::Gcra>) {
          add(p.rate, p.period, p.burst, 0);
        } else if constexpr (std::is_same_v<P, algorithm::LeakyBucket>) {
          add(p.rate, p.period, p.max_delay, 0);
        } else if constexpr (std::is_same_v<P, algorithm::Concurrency>) {
          add(p.limit, p.lease_ttl, 0, 0);
        } else {
          add(p.limit, p.window, 0, 0);  // fixed_window, sliding_window, sliding_log
        }
      },
      limit);
}

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

// Seven integers starting at `first`: {allowed, limit, remaining, retry_after, reset_after,
// delay, limit_index}, -1 standing for absent.
StatusOr<algorithm::PolicyVerdict> verdict_at(const redis::Reply& reply, std::size_t first) {
  const auto& values = reply.elements();
  if (!reply.is_array() || values.size() < first + 7) return unexpected(reply);
  for (std::size_t i = first; i < first + 7; ++i) {
    if (!values[i].is_integer()) return unexpected(reply);
  }
  const auto at = [&](std::size_t i) { return values[first + i].as_integer(); };
  const auto optional = [](std::int64_t v) { return v < 0 ? std::nullopt : std::optional(v); };
  algorithm::PolicyVerdict result;
  result.verdict = {.allowed = at(0) == 1,
                    .limit = at(1),
                    .remaining = at(2),
                    .retry_after = optional(at(3)),
                    .reset_after = at(4),
                    .delay = optional(at(5))};
  result.limit_index = static_cast<std::size_t>(at(6));
  return result;
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

std::vector<std::string> RedisStore::limit_args(const SubjectRef& ref, std::int64_t cost,
                                                std::string_view lease) const {
  std::vector<std::string> args;
  args.reserve(3 + ref.limits.size() * 5);
  args.push_back(std::to_string(cost));
  args.emplace_back(lease);
  for (const Limit& limit : ref.limits) append_limit(limit, args);
  pin_time(args);
  return args;
}

StatusOr<StoreDecision> RedisStore::acquire(const SubjectRef& ref, std::int64_t cost) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  if (Status status = algorithm::validate_cost(cost); !status.ok()) return status;
  const std::string lease =
      cost > 0 && algorithm::uses_leases(ref.limits) ? new_lease_id() : std::string();
  StatusOr<redis::Reply> reply =
      client_->eval_script(scripts_->get(ScriptOperation::kAcquire, ref.limits), limit_keys(ref),
                           limit_args(ref, cost, lease));
  if (!reply.ok()) return reply.status();
  StatusOr<algorithm::PolicyVerdict> verdict = verdict_at(*reply, 0);
  if (!verdict.ok()) return verdict.status();
  StoreDecision decision{.verdict = *verdict};
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
  StatusOr<redis::Reply> reply =
      client_->eval_script(scripts_->get(ScriptOperation::kInspect, ref.limits), limit_keys(ref),
                           limit_args(ref, 0, {}));
  if (!reply.ok()) return reply.status();
  std::vector<algorithm::Verdict> verdicts;
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    StatusOr<algorithm::PolicyVerdict> verdict = verdict_at(*reply, i * 7);
    if (!verdict.ok()) return verdict.status();
    verdicts.push_back(verdict->verdict);
  }
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
