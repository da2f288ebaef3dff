// OverLimitCache: the local over-limit cache (docs/defences.md §1). A subject the store denied
// until T is denied here until T, with no store round trip. It is exact: an entry answers only
// requests the store would deny too —
//   - T is the instant the store call was sent plus the denial's retry_after: the store computed
//     retry_after at a later instant, so T is never past the true retry point;
//   - only costs >= the denied cost (a smaller one may pass earlier);
//   - only while the policy's limits are the ones that denied (a changed policy misses);
//   - only for policies where nothing but time frees units (policy::uses_over_limit_cache: no
//     concurrency limit, whose leases others release; no max_debt, whose refunds free units).
// A denial with no retry_after (a cost the limit can never grant) is not cached.
//
// Bounded: at most `capacity` entries; a full cache drops expired entries first, then the one
// that expires soonest (it would save the fewest calls). Time is the caller's (steady clock).
// Counts hits, entries and evictions in DefenceMetrics. Thread-safe (sharded locks).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/algorithm/limit.h"
#include "sluice/core/mutex.h"
#include "sluice/decision.h"
#include "sluice/policy/policy.h"
#include "sluice/service/defence_metrics.h"
#include "sluice/time.h"

namespace sluice::service {

class OverLimitCache {
 public:
  // capacity 0: the cache holds nothing and answers nothing.
  OverLimitCache(std::size_t capacity, DefenceMetrics& metrics);

  // The denial the cache holds for `cost` units of `subject` under `policy` at `now`: the
  // store's verdict with retry_after counted down to now. Counts a hit.
  std::optional<Decision> find(const policy::Policy& policy, std::string_view subject,
                               std::int64_t cost, Micros now);
  // Remembers the store's answer `stored` to a request for `cost` units sent at `asked_at`, when
  // it is a denial with a retry_after. Replaces what the subject had.
  void remember(const policy::Policy& policy, std::string_view subject, std::int64_t cost,
                const Decision& stored, Micros asked_at, Micros now);
  // Drops the subject's entry (units were given back: a refund, a reset).
  void forget(std::string_view policy, std::string_view subject);

  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    Micros expires = 0;  // denied strictly before this instant
    Micros resets = 0;   // reset_after as an instant
    std::int64_t cost = 0;
    std::uint64_t limits = 0;  // fingerprint of the policy's limits
    algorithm::Verdict verdict;
    std::size_t limit_index = 0;
    std::multimap<Micros, const std::string*>::iterator by_expiry;
  };
  struct Shard {
    mutable Mutex mutex;
    std::unordered_map<std::string, Entry> entries SLUICE_GUARDED_BY(mutex);
    std::multimap<Micros, const std::string*> by_expiry SLUICE_GUARDED_BY(mutex);
  };
  static constexpr std::size_t kShards = 16;

  Shard& shard(std::string_view key);
  // Removes `it` from `shard` (its lock held).
  void erase(Shard& shard, std::unordered_map<std::string, Entry>::iterator it)
      SLUICE_REQUIRES(shard.mutex);

  const std::size_t capacity_;
  const std::size_t shard_capacity_;
  DefenceMetrics& metrics_;
  std::array<Shard, kShards> shards_;
};

// A fingerprint of a policy's limits: equal limits give equal values, and a change to any
// parameter changes it (but for 64-bit hash collisions).
std::uint64_t limits_fingerprint(std::span<const algorithm::Limit> limits);

}  // namespace sluice::service
