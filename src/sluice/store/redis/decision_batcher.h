// DecisionBatcher: the decisions that wait at the same time leave as one `evaluate` script call.
//
// Under load, a decision usually arrives while earlier ones are on their way to Redis; the client
// would then hold its EVALSHA until the next reply anyway (client.h: requests wait while replies
// are outstanding). The batcher uses that wait: decisions arriving while a call is outstanding
// queue, and when a call's reply comes back the next call takes every queued decision (up to
// `max_batch`). A decision that finds no call outstanding leaves at once, written from its
// caller's thread, so a lone caller waits no longer than without batching. What Redis saves is
// each decision's share of a script call: parsing, dispatch, the script's setup, TIME, and the
// reply's write (docs/redis-scripts.md).
//
// A second call (up to `batches_in_flight`) leaves only halfway through answering one, with the
// decisions queued by then, and only while Redis has fewer than half that call's decisions to
// work on. Callers that send their next decision from inside the callback (async callers; a
// closed loop of N) then split into two halves that alternate: Redis runs one half while the
// other is answered, instead of idling through every answer.
//
// Semantics are unchanged: Redis runs a call's decisions one after the other inside one atomic
// script, so each sees every earlier decision's writes, exactly as if it had been sent alone at
// that instant (all decisions of a call share the instant: one TIME). A call that fails (Redis
// unreachable, timed out, a script error) fails every decision in it with the same status.
//
// Redis Cluster: every key of one script call must share a hash slot, so a cluster router will
// need one queue per slot (docs/redis.md). Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/core/mutex.h"
#include "sluice/status.h"
#include "sluice/store/redis/multiplexer.h"

namespace sluice::store {

struct DecisionBatcherOptions {
  std::size_t max_batch = 64;  // decisions per script call
  int batches_in_flight = 2;   // script calls outstanding at most
  // TESTS ONLY: appended to every call as the pinned time (RedisStoreOptions).
  const Clock* pinned_clock_for_tests = nullptr;
};

// Decisions sent and script calls made since creation, and the most calls ever outstanding at once.
struct DecisionBatchStats {
  std::uint64_t decisions = 0;
  std::uint64_t calls = 0;
  int most_in_flight = 0;
};

class DecisionBatcher {
 public:
  DecisionBatcher(std::shared_ptr<redis::Multiplexer> client, redis::Script script,
                  DecisionBatcherOptions options);

  DecisionBatcher(const DecisionBatcher&) = delete;
  DecisionBatcher& operator=(const DecisionBatcher&) = delete;

  // Sends one decision (its limit keys and its request, script_set.h) and blocks until its part
  // of the reply, which is `reply_bytes` long. Errors: the client's (Unavailable,
  // DeadlineExceeded, …) or Internal for a reply of the wrong shape.
  StatusOr<std::string> decide(std::vector<std::string> keys, std::string request,
                               std::size_t reply_bytes);

  // As decide, without blocking: `done` runs once with the result on the client's I/O thread
  // (never inside this call), and must not block.
  using Callback = std::function<void(StatusOr<std::string>)>;
  void decide_async(std::vector<std::string> keys, std::string request, std::size_t reply_bytes,
                    Callback done);

  // Waits until no script call is outstanding. Callers must not submit meanwhile.
  ~DecisionBatcher();

  DecisionBatchStats stats() const;

 private:
  struct Entry;

  // Queues `entry` and sends the queue when fewer than batches_in_flight calls are out.
  void submit(Entry* entry);
  // Takes up to max_batch queued entries.
  std::vector<Entry*> take_locked() SLUICE_REQUIRES(mu_);
  void send(std::vector<Entry*> batch);
  void complete(const std::vector<Entry*>& batch, StatusOr<redis::Reply> reply);
  // Halfway through answering a call (`answered` decisions so far), sends what is queued on a
  // further call, if one is allowed and it pays (decision_batcher.cc).
  void send_early(std::size_t answered);

  const std::shared_ptr<redis::Multiplexer> client_;
  const redis::Script script_;
  const DecisionBatcherOptions options_;

  mutable Mutex mu_;
  CondVar idle_;  // in_flight_ fell to 0 (the destructor waits for it)
  std::vector<Entry*> queue_
      SLUICE_GUARDED_BY(mu_);  // waiting for a call; each lives in its decide() frame
  int in_flight_ SLUICE_GUARDED_BY(mu_) = 0;
  std::size_t outstanding_ SLUICE_GUARDED_BY(mu_) =
      0;  // decisions in calls sent and not yet being answered
  DecisionBatchStats stats_ SLUICE_GUARDED_BY(mu_);
};

}  // namespace sluice::store
