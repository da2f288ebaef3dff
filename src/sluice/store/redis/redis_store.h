// RedisStore: the Store whose state lives in Redis, shared by every process that talks to the
// same Redis. Each decision is made by a Lua script (all limits of a policy at once) on Redis's
// own clock; decisions that wait at the same time share one script call (decision_batcher.h), so
// each is one round trip and, under load, a fraction of a script call. Keys:
// "sluice:{<policy>:<subject>}:<limit-index>" (core/key.h), so one subject's keys share a Redis
// Cluster hash slot. Thread-safe. The scripts, what they are sent and what they answer:
// script_set.h and docs/redis-scripts.md.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"
#include "sluice/store/redis/decision_batcher.h"
#include "sluice/store/redis/multiplexer.h"
#include "sluice/store/redis/script_set.h"
#include "sluice/store/store.h"

namespace sluice::store {

struct RedisStoreOptions {
  // Decisions that wait at the same time share one script call (decision_batcher.h): at most this
  // many per call, with at most `batches_in_flight` calls outstanding. max_batch 1: every decision
  // is its own call (no batching; calls pipeline in the client as any other command).
  std::size_t max_batch = 64;
  int batches_in_flight = 2;
  // TESTS ONLY: decide at this clock's time instead of Redis's TIME, so conformance traces replay
  // deterministically. Production code never sets it: a client's clock is never trusted.
  const Clock* pinned_clock_for_tests = nullptr;
  // Where the client reads the time it computes calendar periods' bounds from (this period's and
  // the next: Redis's TIME picks). Null: the system clock, or pinned_clock_for_tests when set.
  // Tests set it apart from the pinned Redis time to show that Redis's clock decides.
  const Clock* calendar_clock = nullptr;
  // Bounds on reservations (store.h): the most TTL, and the most open reservations per subject,
  // which quota.lua holds with the subject's index of them (docs/redis-scripts.md).
  ReservationLimits reservations;
};

class RedisStore final : public Store {
 public:
  RedisStore(std::shared_ptr<redis::Multiplexer> client, RedisStoreOptions options = {});
  // A store on the Redis of `url` (redis://[user:password@]host:port/db): its client takes the
  // URL's address, credentials and database over `base`. InvalidArgument naming what is wrong
  // with the URL. Succeeds while Redis is down, as redis::Multiplexer::create does.
  static StatusOr<std::unique_ptr<RedisStore>> open(std::string_view url,
                                                    redis::MultiplexerOptions base = {},
                                                    RedisStoreOptions options = {});
  ~RedisStore() override;
  // Before the store is used (sluice serve sets its settings after opening it).
  void set_reservation_limits(const ReservationLimits& limits) { options_.reservations = limits; }

  // Errors: InvalidArgument for bad input; Unavailable / DeadlineExceeded when Redis cannot be
  // reached in time (the caller's failure mode decides what that means); Internal for a reply
  // that is not what the script returns.
  // The decision port. Every `done` runs on the client's I/O thread (after input errors: at
  // once, on the caller's).
  void acquire(const SubjectRef& ref, std::int64_t cost, Done done) override;
  bool answers_in_process() const override { return false; }
  void lease(const SubjectRef& ref, LeaseOperation operation, std::string_view lease,
             LeaseDone done) override;
  // Charge / refund in one call of the `quota` script (scripts/quota.lua; redis_store_quota.cc).
  void apply_quota(const SubjectRef& ref, const QuotaRequest& request, Done done) override;
  // Token leases: the `quota` script's take and give (redis_store_quota.cc), on Redis's clock.
  void take_tokens(const SubjectRef& ref, std::int64_t least, std::int64_t most,
                   TakeDone done) override;
  void give_back_tokens(const SubjectRef& ref, std::int64_t units, Micros taken_at,
                        Done done) override;
  // The admin inspector.
  StatusOr<std::vector<algorithm::Verdict>> inspect(const SubjectRef& ref) override;
  Status reset(const SubjectRef& ref) override;
  // The `evaluate` script's inspect at `cost`: each limit decided on Redis's clock exactly as an
  // acquire would decide it, nothing written.
  StatusOr<DryRun> dry_run(const SubjectRef& ref, std::int64_t cost) override;
  // The `lease` script's list: live leases by Redis's clock.
  StatusOr<std::vector<LimitLeases>> leases(const SubjectRef& ref, std::size_t max) override;
  // The `penalty` script (scripts/penalty.lua; redis_store_penalty.cc), on Redis's clock.
  StatusOr<PenaltyStatus> penalty(const SubjectRef& ref) override;
  StatusOr<bool> lift_penalty(const SubjectRef& ref) override;

  // Whether this Redis will serve decisions, asked once at start so that a configuration error
  // is not mistaken for an outage: a Redis Cluster node answers FailedPrecondition (keys of
  // other slots would be refused, MOVED), asked before the probe, whose key may be another
  // node's; then a peek on a probe subject runs the decision scripts on Sluice's keys (it
  // writes nothing), so wrong credentials answer Unauthenticated and a user without the needed
  // commands or keys PermissionDenied. Unavailable or
  // DeadlineExceeded: Redis did not answer (an outage; the failure modes cover it).
  Status check_configuration();
  // "host:port/db", "cluster h1:p1,h2:p2" or "master \"name\" of sentinels s1:p1,…/db", without
  // credentials: how messages name this Redis.
  std::string address() const;

  redis::Multiplexer& client() { return *client_; }
  // Decisions sent to Redis and the script calls that carried them (equal without batching).
  DecisionBatchStats batch_stats() const;

 private:
  // The script call of a lease operation: its keys and arguments, or false when the policy has
  // no concurrency limit (nothing to do).
  struct LeaseCall {
    std::vector<std::string> keys;
    std::vector<std::string> args;
  };
  StatusOr<std::optional<LeaseCall>> lease_call(const SubjectRef& ref, std::string_view operation,
                                                std::string_view lease) const;

  // The penalty script's answer for `operation` ("show" or "lift").
  StatusOr<PenaltyStatus> penalty_operation(const SubjectRef& ref, std::string_view operation);
  // The client's time for calendar bounds (RedisStoreOptions::calendar_clock).
  Micros calendar_now() const;
  // The quota script's ARGV for `request`, after validation; `operation`: quota.lua's for it
  // (script_set.h quota_request), which take and give set apart from request.operation.
  StatusOr<std::vector<std::string>> quota_args(const SubjectRef& ref, const QuotaRequest& request,
                                                QuotaScriptOperation operation) const;
  // A token batch's ARGV (take or give): quota_args with `bound` (take's least, give's
  // taken_at) after the request; InvalidArgument for limits that cannot batch tokens.
  StatusOr<std::vector<std::string>> token_batch_args(const SubjectRef& ref,
                                                      const QuotaRequest& request,
                                                      QuotaScriptOperation operation,
                                                      std::int64_t bound) const;
  // take_tokens' ARGV, after checking 1 <= least <= most.
  StatusOr<std::vector<std::string>> take_args(const SubjectRef& ref, std::int64_t least,
                                               std::int64_t most) const;
  // Runs the quota script with `args` and hands its reply to `answer` (on the I/O thread); an
  // error in `args` is handed to `answer` instead, at once: every quota answer has one way out.
  void run_quota_script(const SubjectRef& ref, const QuotaRequest& request,
                        StatusOr<std::vector<std::string>> args,
                        std::function<void(const StatusOr<redis::Reply>&)> answer);
  // One decision's ARGV for an unbatched `evaluate` call; counts it in batch_stats.
  std::vector<std::string> unbatched_args(std::string request);
  // Sends one decision's request (script_set.h) and returns its part of the reply.
  StatusOr<std::string> evaluate(const SubjectRef& ref, ScriptOperation operation,
                                 std::string request);
  // Validates an acquire and packs its request; sets `lease` when it takes one.
  StatusOr<std::string> acquire_request(const SubjectRef& ref, std::int64_t cost,
                                        std::string& lease) const;

  std::shared_ptr<redis::Multiplexer> client_;
  RedisStoreOptions options_;
  // The clock whose time the scripts take as their last argument (the tests' pinned clock, or
  // the system clock with clock=client in the Redis URL); null: Redis's own (TIME).
  const Clock* const caller_clock_;
  std::unique_ptr<ScriptSet> scripts_;
  // Whether the client routes by hash slot (Redis Cluster): then decisions batch per slot.
  bool routes_by_slot() const;
  // The batcher for the slot of a decision's limit keys, made on first use; null when max_batch
  // is 1.
  DecisionBatcher* batcher_for(const std::vector<std::string>& keys);

  // One entry (standalone) or one per cluster slot; null when max_batch is 1.
  std::unique_ptr<std::atomic<DecisionBatcher*>[]> batchers_;
  mutable Mutex batchers_mu_;  // guards owned_batchers_ and the creation of entries
  std::vector<std::unique_ptr<DecisionBatcher>> owned_batchers_ SLUICE_GUARDED_BY(batchers_mu_);
  std::atomic<std::uint64_t> unbatched_decisions_{0};
};

}  // namespace sluice::store
