// RedisStore: the Store whose state lives in Redis, shared by every process that talks to the
// same Redis. Each operation is one Lua script call (all limits of a policy at once, one round
// trip), on Redis's own clock. Keys: "sluice:{<policy>:<subject>}:<limit-index>" (core/key.h), so
// every key of one call shares a Redis Cluster hash slot. Thread-safe; calls from many threads
// are pipelined over the client's few connections. The scripts, what they are sent and what they
// answer: script_set.h and docs/redis-scripts.md.
#pragma once

#include <memory>

#include "sluice/core/clock.h"
#include "sluice/store/redis/client.h"
#include "sluice/store/store.h"

namespace sluice::store {

class ScriptSet;

struct RedisStoreOptions {
  // TESTS ONLY: decide at this clock's time instead of Redis's TIME, so conformance traces replay
  // deterministically. Production code never sets it: a client's clock is never trusted.
  const Clock* pinned_clock_for_tests = nullptr;
};

class RedisStore final : public Store {
 public:
  RedisStore(std::shared_ptr<redis::Client> client, RedisStoreOptions options = {});
  ~RedisStore() override;

  // Errors: InvalidArgument for bad input; Unavailable / DeadlineExceeded when Redis cannot be
  // reached in time (the caller's failure mode decides what that means); Internal for a reply
  // that is not what the script returns.
  StatusOr<StoreDecision> acquire(const SubjectRef& ref, std::int64_t cost) override;
  StatusOr<bool> release(const SubjectRef& ref, std::string_view lease) override;
  StatusOr<bool> renew(const SubjectRef& ref, std::string_view lease) override;
  StatusOr<std::vector<algorithm::Verdict>> inspect(const SubjectRef& ref) override;
  Status reset(const SubjectRef& ref) override;

  redis::Client& client() { return *client_; }

 private:
  StatusOr<bool> lease_operation(const SubjectRef& ref, std::string_view operation,
                                 std::string_view lease);
  void pin_time(std::vector<std::string>& args) const;

  std::shared_ptr<redis::Client> client_;
  RedisStoreOptions options_;
  std::unique_ptr<ScriptSet> scripts_;
};

}  // namespace sluice::store
