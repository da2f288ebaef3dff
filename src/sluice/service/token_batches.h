// TokenBatches: bounded-error token batches for hot subjects, documented as token leasing
// (docs/defences.md "Token leasing for hot keys"; docs/decisions.md on the name). For a policy with
// lease_tokens k, a node takes up to k units of a subject from the store in one script call
// (DecisionPort::take_tokens, on the store's clock) and decides the next requests locally from them
// until they are spent or the policy's lease_period has passed; then it gives the unused units back
// (DecisionPort::give_back_tokens). At most one take per subject is in flight per node, and a node
// never holds more than k unspent units of a subject, so N nodes admit at most N·k units beyond
// what the store's algorithm admits over any interval (the units they held when it began): the
// documented bound.
//
// Thread-safe. Answers run on the caller's thread (a batch that holds the units) or on the
// store's I/O thread (after a take); give-backs are timed by the TimerQueue.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sluice/core/timer_queue.h"
#include "sluice/policy/policy.h"
#include "sluice/store/store.h"

namespace sluice::service {

struct TokenBatchStats {
  std::uint64_t takes = 0;             // take calls answered by the store (taken or refused)
  std::uint64_t taken = 0;             // units taken
  std::uint64_t given_back = 0;        // unused units sent back at expiry
  std::uint64_t local = 0;             // decisions allowed from a batch, with no store call
  std::uint64_t give_back_errors = 0;  // give-backs the store did not take (units lost, not added)
};

class TokenBatches {
 public:
  // `store` and `timers` must outlive this object; timers' clock times the batches.
  TokenBatches(store::DecisionPort& store, TimerQueue& timers);
  // Gives back every unspent unit (asynchronously, best effort) and drops the batches.
  ~TokenBatches();
  TokenBatches(const TokenBatches&) = delete;
  TokenBatches& operator=(const TokenBatches&) = delete;

  using Answer = std::function<void(StatusOr<Decision>)>;

  // The decision if the subject's live batch holds `cost` units (they are spent); nullopt when a
  // store call is needed (call acquire). Precondition: policy.lease_tokens > 0.
  std::optional<Decision> try_spend(const policy::Policy& policy, std::string_view subject,
                                    std::int64_t cost);
  // Decides `cost` units from the batch, taking a new one if needed: `done` runs once with an
  // allowed decision, the store's refusal (nothing taken), or the store's error. `policy` is read
  // only during the call.
  void acquire(const policy::Policy& policy, std::string_view subject, std::int64_t cost,
               Answer done);

  // Gives back every unspent unit now (tests, shutdown), as expiry would.
  void expire_all();

  TokenBatchStats stats() const;

 private:
  struct Batch;
  struct Shard;
  Shard& shard_for(std::string_view key);
  // Starts a take for `batch` (its shard's mutex held).
  void start_take(const std::shared_ptr<Batch>& batch, std::int64_t least);
  void on_taken(const std::shared_ptr<Batch>& batch, std::uint64_t generation,
                StatusOr<store::TokenTake> taken);
  void expire(const std::shared_ptr<Batch>& batch, std::uint64_t generation);
  void give_back(const std::shared_ptr<Batch>& batch, std::int64_t units, Micros taken_at);

  store::DecisionPort& store_;
  TimerQueue& timers_;
  std::unique_ptr<Shard[]> shards_;
  struct Counters {
    std::atomic<std::uint64_t> takes{0};
    std::atomic<std::uint64_t> taken{0};
    std::atomic<std::uint64_t> given_back{0};
    std::atomic<std::uint64_t> local{0};
    std::atomic<std::uint64_t> give_back_errors{0};
  };
  // Shared with the give-backs in flight, which the destructor sends and does not wait for.
  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
};

}  // namespace sluice::service
