#include "sluice/store/redis/redis_store.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/redis/hash_slot.h"
#include "sluice/store/redis/redis_url.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::store {
namespace {

std::vector<std::string> limit_keys(const SubjectRef& ref) {
  std::vector<std::string> keys;
  keys.reserve(ref.limits.size() + 1);
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    keys.push_back(redis_limit_key(ref.policy, ref.subject, i));
  }
  return keys;
}

// An acquire's keys: the limits', then the penalty box's when the policy has one.
std::vector<std::string> acquire_keys(const SubjectRef& ref) {
  std::vector<std::string> keys = limit_keys(ref);
  if (ref.penalty != nullptr) keys.push_back(redis_penalty_key(ref.policy, ref.subject));
  return keys;
}

std::size_t acquire_reply_bytes(const SubjectRef& ref) {
  return ref.penalty != nullptr ? kPenalizedVerdictBytes : kVerdictBytes;
}

Status unexpected(const redis::Reply& reply) {
  return internal_error("redis store: unexpected script reply " + reply.debug_string());
}

Status unexpected(const std::vector<algorithm::PolicyVerdict>& verdicts) {
  return internal_error("redis store: unexpected script reply of " +
                        std::to_string(verdicts.size()) + " verdicts");
}

// The bytes of an unbatched `evaluate` reply.
StatusOr<std::string> script_bytes(StatusOr<redis::Reply> answer) {
  SLUICE_ASSIGN_OR_RETURN(const redis::Reply reply, std::move(answer));
  if (!reply.is_string()) return unexpected(reply);
  return std::string(reply.as_string());
}

// The verdicts in one decision's part of a reply: `count` of them, about `limits` limits.
StatusOr<std::vector<algorithm::PolicyVerdict>> verdicts_in(const StatusOr<std::string>& bytes,
                                                            std::size_t count, std::size_t limits) {
  SLUICE_RETURN_IF_ERROR(bytes.status());
  SLUICE_ASSIGN_OR_RETURN(std::vector<algorithm::PolicyVerdict> unpacked, unpack_verdicts(*bytes));
  if (unpacked.size() != count) return unexpected(unpacked);
  for (const algorithm::PolicyVerdict& verdict : unpacked) {
    if (verdict.limit_index >= limits) return unexpected(unpacked);
  }
  return unpacked;
}

// An acquire's decision from its part of a reply; `lease` is the id it sent (empty: none).
StatusOr<Decision> decision_in(const StatusOr<std::string>& bytes, std::size_t limits,
                               const std::string& lease, bool penalized) {
  if (penalized) {
    SLUICE_RETURN_IF_ERROR(bytes.status());
    SLUICE_ASSIGN_OR_RETURN(const algorithm::PolicyVerdict verdict,
                            unpack_penalized_verdict(*bytes));
    if (verdict.limit_index >= limits) return internal_error("redis store: bad limit index");
    Decision decision = decision_from(verdict);
    if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
    return decision;
  }
  SLUICE_ASSIGN_OR_RETURN(const std::vector<algorithm::PolicyVerdict> verdicts,
                          verdicts_in(bytes, 1, limits));
  Decision decision = decision_from(verdicts[0]);
  if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
  return decision;
}

}  // namespace

StatusOr<std::unique_ptr<RedisStore>> RedisStore::open(std::string_view url,
                                                       redis::MultiplexerOptions base,
                                                       RedisStoreOptions options) {
  SLUICE_ASSIGN_OR_RETURN(const redis::RedisUrl parsed, redis::parse_redis_url(url));
  base = redis::client_options_from_url(parsed, std::move(base));
  // Every node is asked at connect which engine it offers (the module, Functions with this
  // store's library, scripts) and whether its scripts may read TIME (script_engine.h).
  if (options.pinned_clock_for_tests != nullptr) base.engine.clock = redis::ScriptClock::kCaller;
  base.engine.probe = true;
  base.engine.library = store_function_library(base.engine.clock == redis::ScriptClock::kCaller);
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<redis::Multiplexer> client,
                          redis::Multiplexer::create(std::move(base)));
  return std::make_unique<RedisStore>(std::shared_ptr<redis::Multiplexer>(std::move(client)),
                                      options);
}

Status RedisStore::check_configuration() {
  // The cluster question first: the probe's key may belong to another node, whose MOVED would
  // read as an outage. INFO may be denied to a user that may run the scripts, and does not
  // answer when Redis is down: only a clear "cluster" answer counts.
  StatusOr<redis::Reply> info = client_->command({"INFO", "cluster"});
  const bool answered = info.ok() && info->is_string();
  const bool cluster_node =
      answered && info->as_string().find("cluster_enabled:1") != std::string::npos;
  if (cluster_node && !routes_by_slot()) {
    return {StatusCode::kFailedPrecondition,
            "redis " + address() +
                " is a Redis Cluster node: a redis:// URL names one server, and the cluster "
                "would refuse (MOVED) every key another node holds. Use "
                "redis+cluster://host:port[,host:port...] to route across the cluster"};
  }
  if (answered && !cluster_node && routes_by_slot()) {
    return {StatusCode::kFailedPrecondition,
            "redis " + address() +
                " is not a Redis Cluster node (cluster_enabled:0): use redis://host:port for a "
                "standalone Redis"};
  }
  const algorithm::Limit probe = algorithm::FixedWindow{.limit = 1, .window = kMicrosPerSecond};
  const SubjectRef ref{.policy = "sluice.check", .limits = {&probe, 1}, .subject = "start"};
  return inspect(ref).status();
}

std::string RedisStore::address() const {
  const redis::MultiplexerOptions& options = client_->options();
  if (!options.sentinels.empty()) {
    std::string sentinels = "master \"" + options.sentinel_master + "\" of sentinels ";
    for (std::size_t i = 0; i < options.sentinels.size(); ++i) {
      sentinels += (i > 0 ? "," : "") + options.sentinels[i].text();
    }
    return sentinels + "/" + std::to_string(options.db);
  }
  if (routes_by_slot()) {
    std::string seeds = "cluster ";
    for (const redis::NodeAddress& seed : options.cluster_seeds) {
      seeds += (seeds.size() > 8 ? "," : "") + seed.text();
    }
    return seeds;
  }
  const bool ipv6 = options.host.find(':') != std::string::npos;
  return (ipv6 ? "[" + options.host + "]" : options.host) + ":" + std::to_string(options.port) +
         "/" + std::to_string(options.db);
}

RedisStore::RedisStore(std::shared_ptr<redis::Multiplexer> client, RedisStoreOptions options)
    : client_(std::move(client)),
      options_(options),
      caller_clock_(caller_clock(options_.pinned_clock_for_tests, *client_)),
      scripts_(std::make_unique<ScriptSet>(caller_clock_ != nullptr)) {
  if (options_.max_batch > 1) {
    batchers_ = std::make_unique<std::atomic<DecisionBatcher*>[]>(
        routes_by_slot() ? redis::kClusterSlots : 1);
  }
}

bool RedisStore::routes_by_slot() const { return !client_->options().cluster_seeds.empty(); }

DecisionBatcher* RedisStore::batcher_for(const std::vector<std::string>& keys) {
  if (batchers_ == nullptr) return nullptr;
  // In a cluster one script call reaches one slot, so decisions batch per slot; a subject's keys
  // all share its slot (core/key.h).
  const std::size_t index =
      routes_by_slot() ? static_cast<std::size_t>(redis::key_hash_slot(keys.front())) : 0;
  std::atomic<DecisionBatcher*>& slot = batchers_[index];
  if (DecisionBatcher* batcher = slot.load(std::memory_order_acquire); batcher != nullptr) {
    return batcher;
  }
  MutexLock lock(batchers_mu_);
  if (DecisionBatcher* batcher = slot.load(std::memory_order_acquire); batcher != nullptr) {
    return batcher;
  }
  owned_batchers_.push_back(std::make_unique<DecisionBatcher>(
      client_, scripts_->get(ScriptOperation::kAcquire),
      DecisionBatcherOptions{.max_batch = options_.max_batch,
                             .batches_in_flight = options_.batches_in_flight,
                             .pinned_clock_for_tests = caller_clock_}));
  slot.store(owned_batchers_.back().get(), std::memory_order_release);
  return owned_batchers_.back().get();
}

RedisStore::~RedisStore() = default;

Micros RedisStore::calendar_now() const {
  if (options_.calendar_clock != nullptr) return options_.calendar_clock->now();
  if (caller_clock_ != nullptr) return caller_clock_->now();
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> RedisStore::unbatched_args(std::string request) {
  unbatched_decisions_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::string> args = {std::move(request)};
  append_pinned_time(args, caller_clock_);
  return args;
}

StatusOr<std::string> RedisStore::evaluate(const SubjectRef& ref, ScriptOperation operation,
                                           std::string request) {
  const bool penalized = operation == ScriptOperation::kAcquire && ref.penalty != nullptr;
  std::vector<std::string> keys = penalized ? acquire_keys(ref) : limit_keys(ref);
  if (DecisionBatcher* batcher = batcher_for(keys); batcher != nullptr) {
    const std::size_t bytes = penalized
                                  ? kPenalizedVerdictBytes
                                  : verdict_count(operation, ref.limits.size()) * kVerdictBytes;
    return batcher->decide(std::move(keys), std::move(request), bytes);
  }
  return script_bytes(client_->eval_script(scripts_->get(operation), std::move(keys),
                                           unbatched_args(std::move(request))));
}

StatusOr<std::string> RedisStore::acquire_request(const SubjectRef& ref, std::int64_t cost,
                                                  std::string& lease) const {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(cost));
  if (cost > 0 && algorithm::uses_leases(ref.limits)) lease = new_unique_id();
  return decision_request(ScriptOperation::kAcquire, ref.limits, cost, calendar_now(), lease,
                          ref.penalty);
}

void RedisStore::acquire(const SubjectRef& ref, std::int64_t cost, Done done) {
  std::string lease;
  StatusOr<std::string> request = acquire_request(ref, cost, lease);
  if (!request.ok()) {
    done(request.status());
    return;
  }
  auto finish = [limits = ref.limits.size(), lease = std::move(lease),
                 penalized = ref.penalty != nullptr,
                 done = std::move(done)](const StatusOr<std::string>& bytes) {
    done(decision_in(bytes, limits, lease, penalized));
  };
  std::vector<std::string> keys = acquire_keys(ref);
  if (DecisionBatcher* batcher = batcher_for(keys); batcher != nullptr) {
    batcher->decide_async(std::move(keys), std::move(*request), acquire_reply_bytes(ref),
                          std::move(finish));
    return;
  }
  client_->async_eval_script(
      scripts_->get(ScriptOperation::kAcquire), std::move(keys),
      unbatched_args(std::move(*request)),
      [finish = std::move(finish)](StatusOr<redis::Reply> reply) {
        finish(script_bytes(std::move(reply)));
      },
      redis::Dispatch::kImmediate);
}

StatusOr<std::optional<RedisStore::LeaseCall>> RedisStore::lease_call(
    const SubjectRef& ref, std::string_view operation, std::string_view lease) const {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  LeaseCall call{.args = {std::string(operation), std::string(lease)}};
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    if (const std::optional<Micros> ttl = algorithm::lease_ttl(ref.limits[i])) {
      call.keys.push_back(redis_limit_key(ref.policy, ref.subject, i));
      call.args.push_back(std::to_string(*ttl));
    }
  }
  if (call.keys.empty()) return std::optional<LeaseCall>();
  append_pinned_time(call.args, caller_clock_);
  return std::optional<LeaseCall>(std::move(call));
}

namespace {

StatusOr<bool> lease_answer(const StatusOr<redis::Reply>& answer) {
  SLUICE_RETURN_IF_ERROR(answer.status());
  if (!answer->is_integer()) return unexpected(*answer);
  return answer->as_integer() == 1;
}

}  // namespace

void RedisStore::lease(const SubjectRef& ref, LeaseOperation operation, std::string_view lease,
                       LeaseDone done) {
  StatusOr<std::optional<LeaseCall>> call =
      lease_call(ref, operation == LeaseOperation::kRelease ? "release" : "renew", lease);
  if (call.ok() && call->has_value()) {
    client_->async_eval_script(
        scripts_->get(ScriptOperation::kLease, ref.limits), std::move((*call)->keys),
        std::move((*call)->args),
        [done = std::move(done)](StatusOr<redis::Reply> reply) { done(lease_answer(reply)); });
    return;
  }
  // Answered without Redis: the reference is invalid, or no limit of it holds leases.
  done(call.ok() ? StatusOr<bool>(false) : StatusOr<bool>(call.status()));
}

StatusOr<std::vector<algorithm::Verdict>> RedisStore::inspect(const SubjectRef& ref) {
  SLUICE_ASSIGN_OR_RETURN(DryRun peek, dry_run(ref, 0));
  return std::move(peek.limits);
}

StatusOr<DryRun> RedisStore::dry_run(const SubjectRef& ref, std::int64_t cost) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(cost));
  SLUICE_ASSIGN_OR_RETURN(const std::vector<algorithm::PolicyVerdict> unpacked,
                          verdicts_in(evaluate(ref, ScriptOperation::kInspect,
                                               decision_request(ScriptOperation::kInspect,
                                                                ref.limits, cost, calendar_now())),
                                      ref.limits.size(), ref.limits.size()));
  DryRun run;
  for (const algorithm::PolicyVerdict& verdict : unpacked) run.limits.push_back(verdict.verdict);
  run.policy = algorithm::combine_verdicts(run.limits);
  return run;
}

namespace {

// One key's part of the lease script's list reply (lease.lua): count, units, then id,
// expires_after, cost per lease.
StatusOr<LimitLeases> limit_leases_in(const redis::Reply& entry, std::size_t limit_index,
                                      std::size_t max) {
  const std::vector<redis::Reply>& items = entry.elements();
  if (!entry.is_array() || items.size() < 2 || (items.size() - 2) % 3 != 0 ||
      (items.size() - 2) / 3 > max || !items[0].is_integer() || !items[1].is_integer()) {
    return unexpected(entry);
  }
  LimitLeases held{.limit_index = limit_index,
                   .count = static_cast<std::size_t>(items[0].as_integer()),
                   .units = items[1].as_integer()};
  for (std::size_t j = 2; j < items.size(); j += 3) {
    if (!items[j].is_string() || !items[j + 1].is_integer() || !items[j + 2].is_integer()) {
      return unexpected(entry);
    }
    held.leases.push_back({.id = items[j].as_string(),
                           .expires_after = items[j + 1].as_integer(),
                           .cost = items[j + 2].as_integer()});
  }
  return held;
}

}  // namespace

StatusOr<std::vector<LimitLeases>> RedisStore::leases(const SubjectRef& ref, std::size_t max) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<LeaseCall> call,
                          lease_call(ref, "list", std::to_string(max)));
  std::vector<LimitLeases> listing;
  if (!call.has_value()) return listing;
  SLUICE_ASSIGN_OR_RETURN(const redis::Reply reply,
                          client_->eval_script(scripts_->get(ScriptOperation::kLease, ref.limits),
                                               std::move(call->keys), std::move(call->args)));
  std::size_t key = 0;
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    if (!algorithm::algorithm_of(ref.limits[i]).leases) continue;
    if (!reply.is_array() || key >= reply.elements().size()) return unexpected(reply);
    SLUICE_ASSIGN_OR_RETURN(LimitLeases held, limit_leases_in(reply.elements()[key++], i, max));
    listing.push_back(std::move(held));
  }
  if (key != reply.elements().size()) return unexpected(reply);
  return listing;
}

Status RedisStore::reset(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  std::vector<std::string> args = {"DEL"};
  for (std::string& key : limit_keys(ref)) args.push_back(std::move(key));
  args.push_back(
      redis_penalty_key(ref.policy, ref.subject));  // as if never seen: its penalty box too
  StatusOr<redis::Reply> reply = client_->execute({.args = std::move(args), .key_index = 1});
  return reply.ok() ? Status{} : reply.status();
}

DecisionBatchStats RedisStore::batch_stats() const {
  if (batchers_ != nullptr) {
    DecisionBatchStats total;
    MutexLock lock(batchers_mu_);
    for (const auto& batcher : owned_batchers_) {
      const DecisionBatchStats stats = batcher->stats();
      total.decisions += stats.decisions;
      total.calls += stats.calls;
      total.most_in_flight = std::max(total.most_in_flight, stats.most_in_flight);
    }
    return total;
  }
  const std::uint64_t decisions = unbatched_decisions_.load(std::memory_order_relaxed);
  return {.decisions = decisions, .calls = decisions};
}

}  // namespace sluice::store
