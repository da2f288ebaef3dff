#include "sluice/service/token_leases.h"

#include <algorithm>
#include <utility>

#include "sluice/service/subject_key.h"

namespace sluice::service {
namespace {

constexpr std::size_t kShards = 64;

}  // namespace

// One subject's lease on one node. The fields below `lease_period` are guarded by the shard's
// mutex; the ones above are fixed when the lease is made (a policy change reaches the subject at
// its next lease, within one lease_period).
struct TokenLeases::Lease {
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

struct TokenLeases::Shard {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Lease>> leases;
};

TokenLeases::TokenLeases(store::DecisionPort& store, TimerQueue& timers)
    : store_(store), timers_(timers), shards_(std::make_unique<Shard[]>(kShards)) {}

TokenLeases::~TokenLeases() { expire_all(); }

TokenLeases::Shard& TokenLeases::shard_for(std::string_view key) {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

std::optional<Decision> TokenLeases::try_spend(const policy::Policy& policy,
                                               std::string_view subject, std::int64_t cost) {
  const std::string key = policy_subject_key(policy.name, subject);
  Shard& shard = shard_for(key);
  const Micros now = timers_.clock().now();
  std::lock_guard lock(shard.mu);
  auto found = shard.leases.find(key);
  if (found == shard.leases.end()) return std::nullopt;
  Lease& lease = *found->second;
  if (lease.taking || lease.units < cost || now >= lease.expires) return std::nullopt;
  counters_->local.fetch_add(1, std::memory_order_relaxed);
  return lease.spend(cost);
}

void TokenLeases::acquire(const policy::Policy& policy, std::string_view subject, std::int64_t cost,
                          Answer done) {
  const std::string key = policy_subject_key(policy.name, subject);
  Shard& shard = shard_for(key);
  const Micros now = timers_.clock().now();
  std::unique_lock lock(shard.mu);
  std::shared_ptr<Lease>& slot = shard.leases[key];
  if (!slot) {
    slot = std::make_shared<Lease>();
    slot->key = key;
    slot->policy = policy.name;
    slot->subject = std::string(subject);
    slot->limits = policy.limits;
    slot->lease_tokens = policy.lease_tokens;
    slot->lease_period = policy.lease_period;
  }
  std::shared_ptr<Lease> lease = slot;
  if (!lease->taking && lease->units >= cost && now < lease->expires) {
    Decision decision = lease->spend(cost);
    lock.unlock();
    counters_->local.fetch_add(1, std::memory_order_relaxed);
    return done(std::move(decision));
  }
  lease->waiters.emplace_back(cost, std::move(done));
  if (lease->taking) return;
  // Too few units left (or none, or expired): they go back before the next take, so this node
  // never holds more than lease_tokens unspent units.
  const std::int64_t leftover = lease->units;
  const Micros taken_at = lease->taken_at;
  lease->units = 0;
  if (lease->expiry) timers_.cancel(*lease->expiry);
  lease->expiry.reset();
  start_take(lease, cost);
  lock.unlock();
  if (leftover > 0) give_back(lease, leftover, taken_at);
}

void TokenLeases::start_take(const std::shared_ptr<Lease>& lease, std::int64_t least) {
  lease->taking = true;
  const std::uint64_t generation = ++lease->generation;
  store_.take_tokens(lease->ref(), least, std::max(lease->lease_tokens, least),
                     [this, lease, generation](StatusOr<store::TokenTake> taken) {
                       on_taken(lease, generation, std::move(taken));
                     });
}

void TokenLeases::on_taken(const std::shared_ptr<Lease>& lease, std::uint64_t generation,
                           StatusOr<store::TokenTake> taken) {
  std::vector<std::pair<Answer, StatusOr<Decision>>> answers;
  {
    Shard& shard = shard_for(lease->key);
    std::lock_guard lock(shard.mu);
    if (generation != lease->generation) return;  // expire_all gave up on this take
    lease->taking = false;
    std::vector<std::pair<std::int64_t, Answer>> waiters = std::move(lease->waiters);
    lease->waiters.clear();
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
      auto found = shard.leases.find(lease->key);
      if (found != shard.leases.end() && found->second == lease) shard.leases.erase(found);
    } else {
      counters_->taken.fetch_add(static_cast<std::uint64_t>(taken->taken),
                                 std::memory_order_relaxed);
      lease->units = taken->taken;
      lease->taken_at = taken->taken_at;
      lease->taken_with = taken->decision;
      lease->expires = timers_.clock().now() + lease->lease_period;
      lease->expiry = timers_.after(lease->lease_period,
                                    [this, lease, generation] { expire(lease, generation); });
      std::size_t served = 0;
      for (; served < waiters.size() && waiters[served].first <= lease->units; ++served) {
        answers.emplace_back(std::move(waiters[served].second),
                             lease->spend(waiters[served].first));
      }
      if (served < waiters.size()) {
        // More waited than this take held: the rest wait for the next one (the leftover goes
        // back first, as in acquire).
        for (std::size_t i = served; i < waiters.size(); ++i) {
          lease->waiters.push_back(std::move(waiters[i]));
        }
        const std::int64_t leftover = lease->units;
        lease->units = 0;
        timers_.cancel(*lease->expiry);
        lease->expiry.reset();
        start_take(lease, lease->waiters.front().first);
        if (leftover > 0) {
          // Sent after the lock is released (give_back takes none, but the store may answer on
          // this thread).
          answers.emplace_back([this, lease, leftover, at = taken->taken_at](
                                   StatusOr<Decision>) { give_back(lease, leftover, at); },
                               Decision{});
        }
      }
    }
  }
  for (auto& [answer, decision] : answers) answer(std::move(decision));
}

void TokenLeases::expire(const std::shared_ptr<Lease>& lease, std::uint64_t generation) {
  std::int64_t units = 0;
  Micros taken_at = 0;
  {
    Shard& shard = shard_for(lease->key);
    std::lock_guard lock(shard.mu);
    if (generation != lease->generation || lease->taking) return;
    units = lease->units;
    taken_at = lease->taken_at;
    lease->units = 0;
    lease->expiry.reset();
    auto found = shard.leases.find(lease->key);
    if (found != shard.leases.end() && found->second == lease) shard.leases.erase(found);
  }
  if (units > 0) give_back(lease, units, taken_at);
}

void TokenLeases::give_back(const std::shared_ptr<Lease>& lease, std::int64_t units,
                            Micros taken_at) {
  // `lease` keeps the ref's strings alive until the store answers.
  store_.give_back_tokens(lease->ref(), units, taken_at,
                          [counters = counters_, lease, units](StatusOr<Decision> given) {
                            if (given.ok()) {
                              counters->given_back.fetch_add(static_cast<std::uint64_t>(units),
                                                             std::memory_order_relaxed);
                            } else {
                              counters->give_back_errors.fetch_add(1, std::memory_order_relaxed);
                            }
                          });
}

void TokenLeases::expire_all() {
  for (std::size_t i = 0; i < kShards; ++i) {
    std::vector<std::pair<std::shared_ptr<Lease>, std::int64_t>> returned;
    std::vector<std::shared_ptr<Lease>> dropped;
    {
      std::lock_guard lock(shards_[i].mu);
      for (auto& [key, lease] : shards_[i].leases) {
        if (lease->expiry) timers_.cancel(*lease->expiry);
        lease->expiry.reset();
        if (lease->units > 0) returned.emplace_back(lease, lease->units);
        lease->units = 0;
        if (lease->taking) {
          // Its take still answers: ignored (generation), so its waiters are answered here.
          ++lease->generation;
          lease->taking = false;
          dropped.push_back(lease);
        }
      }
      shards_[i].leases.clear();
    }
    for (auto& [lease, units] : returned) give_back(lease, units, lease->taken_at);
    for (auto& lease : dropped) {
      for (auto& [cost, answer] : lease->waiters) {
        answer(unavailable("token lease: dropped while its take was in flight"));
      }
      lease->waiters.clear();
    }
  }
}

TokenLeaseStats TokenLeases::stats() const {
  return {.takes = counters_->takes.load(),
          .taken = counters_->taken.load(),
          .given_back = counters_->given_back.load(),
          .local = counters_->local.load(),
          .give_back_errors = counters_->give_back_errors.load()};
}

}  // namespace sluice::service
