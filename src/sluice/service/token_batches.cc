#include "sluice/service/token_batches.h"

#include <algorithm>
#include <utility>

#include "sluice/core/mutex.h"
#include "sluice/service/subject_key.h"

namespace sluice::service {
namespace {

constexpr std::size_t kShards = 64;

}  // namespace

// One subject's batch on one node. The fields below `lease_period` are guarded by the shard's
// mutex; the ones above are fixed when the batch is made (a policy change reaches the subject at
// its next batch, within one lease_period).
struct TokenBatches::Batch {
  std::string key;
  std::string policy;
  std::string subject;
  std::vector<algorithm::Limit> limits;
  std::int64_t lease_tokens = 0;
  Micros lease_period = 0;

  std::int64_t units = 0;        // unspent
  Micros expires = 0;            // timers' clock
  Micros taken_at = 0;           // the store's clock, for the give-back
  Decision taken_with;           // the take's decision: limit, index, the store's balance after it
  std::uint64_t generation = 0;  // bumped per take: an older expiry timer does nothing
  bool taking = false;
  std::vector<std::pair<std::int64_t, Answer>> waiters;  // cost, answer: waiting for the take
  std::optional<TimerQueue::Handle> expiry;

  store::SubjectRef ref() const { return {.policy = policy, .limits = limits, .subject = subject}; }
  Decision spend(std::int64_t cost) {
    units -= cost;
    Decision decision{.limit_index = taken_with.limit_index};
    decision.verdict.allowed = true;
    decision.verdict.limit = taken_with.verdict.limit;
    // What this node still holds plus what the store held after the take: the units this node
    // knows of (other nodes may have spent some of the latter since).
    decision.verdict.remaining = units + taken_with.verdict.remaining;
    decision.verdict.reset_after = taken_with.verdict.reset_after;
    return decision;
  }
};

struct TokenBatches::Shard {
  Mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Batch>> batches SLUICE_GUARDED_BY(mu);
};

TokenBatches::TokenBatches(store::DecisionPort& store, TimerQueue& timers)
    : store_(store), timers_(timers), shards_(std::make_unique<Shard[]>(kShards)) {}

TokenBatches::~TokenBatches() { expire_all(); }

TokenBatches::Shard& TokenBatches::shard_for(std::string_view key) {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

std::optional<Decision> TokenBatches::try_spend(const policy::Policy& policy,
                                                std::string_view subject, std::int64_t cost) {
  const std::string key = policy_subject_key(policy.name, subject);
  Shard& shard = shard_for(key);
  const Micros now = timers_.clock().now();
  MutexLock lock(shard.mu);
  auto found = shard.batches.find(key);
  if (found == shard.batches.end()) return std::nullopt;
  Batch& batch = *found->second;
  if (batch.taking || batch.units < cost || now >= batch.expires) return std::nullopt;
  counters_->local.fetch_add(1, std::memory_order_relaxed);
  return batch.spend(cost);
}

void TokenBatches::acquire(const policy::Policy& policy, std::string_view subject,
                           std::int64_t cost, Answer done) {
  const std::string key = policy_subject_key(policy.name, subject);
  Shard& shard = shard_for(key);
  const Micros now = timers_.clock().now();
  MutexLock lock(shard.mu);
  std::shared_ptr<Batch>& slot = shard.batches[key];
  if (!slot) {
    slot = std::make_shared<Batch>();
    slot->key = key;
    slot->policy = policy.name;
    slot->subject = std::string(subject);
    slot->limits = policy.limits;
    slot->lease_tokens = policy.lease_tokens;
    slot->lease_period = policy.lease_period;
  }
  std::shared_ptr<Batch> batch = slot;
  if (!batch->taking && batch->units >= cost && now < batch->expires) {
    Decision decision = batch->spend(cost);
    lock.unlock();
    counters_->local.fetch_add(1, std::memory_order_relaxed);
    return done(std::move(decision));
  }
  batch->waiters.emplace_back(cost, std::move(done));
  if (batch->taking) return;
  // Too few units left (or none, or expired): they go back before the next take, so this node
  // never holds more than lease_tokens unspent units.
  const std::int64_t leftover = batch->units;
  const Micros taken_at = batch->taken_at;
  batch->units = 0;
  if (batch->expiry) timers_.cancel(*batch->expiry);
  batch->expiry.reset();
  start_take(batch, cost);
  lock.unlock();
  if (leftover > 0) give_back(batch, leftover, taken_at);
}

void TokenBatches::start_take(const std::shared_ptr<Batch>& batch, std::int64_t least) {
  batch->taking = true;
  const std::uint64_t generation = ++batch->generation;
  store_.take_tokens(batch->ref(), least, std::max(batch->lease_tokens, least),
                     [this, batch, generation](StatusOr<store::TokenTake> taken) {
                       on_taken(batch, generation, std::move(taken));
                     });
}

void TokenBatches::on_taken(const std::shared_ptr<Batch>& batch, std::uint64_t generation,
                            StatusOr<store::TokenTake> taken) {
  std::vector<std::pair<Answer, StatusOr<Decision>>> answers;
  {
    Shard& shard = shard_for(batch->key);
    MutexLock lock(shard.mu);
    if (generation != batch->generation) return;  // expire_all gave up on this take
    batch->taking = false;
    std::vector<std::pair<std::int64_t, Answer>> waiters = std::move(batch->waiters);
    batch->waiters.clear();
    if (taken.ok()) {
      counters_->takes.fetch_add(1, std::memory_order_relaxed);
      // An acquire's answer: a quota operation's signed balance is not part of it.
      taken->decision.verdict.balance.reset();
    }
    if (!taken.ok() || taken->taken == 0) {
      // An error or a refusal answers every waiter: each one's failure mode or denial applies.
      for (auto& [cost, answer] : waiters) {
        answers.emplace_back(std::move(answer), taken.ok() ? StatusOr<Decision>(taken->decision)
                                                           : StatusOr<Decision>(taken.status()));
      }
      auto found = shard.batches.find(batch->key);
      if (found != shard.batches.end() && found->second == batch) shard.batches.erase(found);
    } else {
      counters_->taken.fetch_add(static_cast<std::uint64_t>(taken->taken),
                                 std::memory_order_relaxed);
      batch->units = taken->taken;
      batch->taken_at = taken->taken_at;
      batch->taken_with = taken->decision;
      batch->expires = timers_.clock().now() + batch->lease_period;
      batch->expiry = timers_.after(batch->lease_period,
                                    [this, batch, generation] { expire(batch, generation); });
      std::size_t served = 0;
      for (; served < waiters.size() && waiters[served].first <= batch->units; ++served) {
        answers.emplace_back(std::move(waiters[served].second),
                             batch->spend(waiters[served].first));
      }
      if (served < waiters.size()) {
        // More waited than this take held: the rest wait for the next one (the leftover goes
        // back first, as in acquire).
        for (std::size_t i = served; i < waiters.size(); ++i) {
          batch->waiters.push_back(std::move(waiters[i]));
        }
        const std::int64_t leftover = batch->units;
        batch->units = 0;
        timers_.cancel(*batch->expiry);
        batch->expiry.reset();
        start_take(batch, batch->waiters.front().first);
        if (leftover > 0) {
          // Sent after the lock is released (give_back takes none, but the store may answer on
          // this thread).
          answers.emplace_back([this, batch, leftover, at = taken->taken_at](
                                   StatusOr<Decision>) { give_back(batch, leftover, at); },
                               Decision{});
        }
      }
    }
  }
  for (auto& [answer, decision] : answers) answer(std::move(decision));
}

void TokenBatches::expire(const std::shared_ptr<Batch>& batch, std::uint64_t generation) {
  std::int64_t units = 0;
  Micros taken_at = 0;
  {
    Shard& shard = shard_for(batch->key);
    MutexLock lock(shard.mu);
    if (generation != batch->generation || batch->taking) return;
    units = batch->units;
    taken_at = batch->taken_at;
    batch->units = 0;
    batch->expiry.reset();
    auto found = shard.batches.find(batch->key);
    if (found != shard.batches.end() && found->second == batch) shard.batches.erase(found);
  }
  if (units > 0) give_back(batch, units, taken_at);
}

void TokenBatches::give_back(const std::shared_ptr<Batch>& batch, std::int64_t units,
                             Micros taken_at) {
  // `batch` keeps the ref's strings alive until the store answers.
  store_.give_back_tokens(batch->ref(), units, taken_at,
                          [counters = counters_, batch, units](StatusOr<Decision> given) {
                            if (given.ok()) {
                              counters->given_back.fetch_add(static_cast<std::uint64_t>(units),
                                                             std::memory_order_relaxed);
                            } else {
                              counters->give_back_errors.fetch_add(1, std::memory_order_relaxed);
                            }
                          });
}

void TokenBatches::expire_all() {
  for (std::size_t i = 0; i < kShards; ++i) {
    std::vector<std::pair<std::shared_ptr<Batch>, std::int64_t>> returned;
    std::vector<std::shared_ptr<Batch>> dropped;
    {
      MutexLock lock(shards_[i].mu);
      for (auto& [key, batch] : shards_[i].batches) {
        if (batch->expiry) timers_.cancel(*batch->expiry);
        batch->expiry.reset();
        if (batch->units > 0) returned.emplace_back(batch, batch->units);
        batch->units = 0;
        if (batch->taking) {
          // Its take still answers: ignored (generation), so its waiters are answered here.
          ++batch->generation;
          batch->taking = false;
          dropped.push_back(batch);
        }
      }
      shards_[i].batches.clear();
    }
    for (auto& [batch, units] : returned) give_back(batch, units, batch->taken_at);
    for (auto& batch : dropped) {
      for (auto& [cost, answer] : batch->waiters) {
        answer(unavailable("token batch: dropped while its take was in flight"));
      }
      batch->waiters.clear();
    }
  }
}

TokenBatchStats TokenBatches::stats() const {
  return {.takes = counters_->takes.load(),
          .taken = counters_->taken.load(),
          .given_back = counters_->given_back.load(),
          .local = counters_->local.load(),
          .give_back_errors = counters_->give_back_errors.load()};
}

}  // namespace sluice::service
