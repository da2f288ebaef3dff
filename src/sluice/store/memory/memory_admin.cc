// The memory store's admin inspector (store.h AdminInspector): inspect, dry run, leases, penalty
// box, reset; and its stats. Its decisions are in memory_store.cc.
#include <algorithm>
#include <utility>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/memory/memory_record.h"
#include "sluice/store/memory/memory_shard.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::store {

using algorithm::Limit;
using algorithm::LimitState;
using memory::Entry;
using memory::key_of;
using memory::live_penalty;
using memory::refresh;

std::vector<LimitState> MemoryStore::current_states(const SubjectRef& ref, Micros now) {
  const auto [key, hash, shard] = locate(ref);
  std::vector<LimitState> states;
  {
    MutexLock lock(shard.mutex);
    Entry* entry = shard.find_live(hash, key, now);
    if (entry != nullptr && entry->limits_held && entry->state_count == ref.limits.size()) {
      const std::span<LimitState> stored = entry->states();
      states.assign(stored.begin(), stored.end());
    }
  }
  if (states.empty()) {
    for (const Limit& limit : ref.limits) states.push_back(algorithm::initial_state(limit, now));
  }
  refresh(ref.limits, states, now);
  return states;
}

StatusOr<std::vector<algorithm::Verdict>> MemoryStore::inspect(const SubjectRef& ref) {
  SLUICE_ASSIGN_OR_RETURN(DryRun peek, dry_run(ref, 0));
  return std::move(peek.limits);
}

StatusOr<DryRun> MemoryStore::dry_run(const SubjectRef& ref, std::int64_t cost) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(cost));
  const Micros now = clock_.now();
  std::vector<LimitState> states = current_states(ref, now);
  DryRun run;
  // Limit by limit on the copy (evaluate charges a copy it allows; it is thrown away), as the
  // Redis script's inspect decides each limit on its own.
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    LimitState scratch = states[i];
    run.limits.push_back(
        algorithm::evaluate(ref.limits.subspan(i, 1), std::span(&scratch, 1), cost, now, {})
            .verdict);
  }
  run.policy = algorithm::combine_verdicts(run.limits);
  return run;
}

StatusOr<std::vector<LimitLeases>> MemoryStore::leases(const SubjectRef& ref, std::size_t max) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  const Micros now = clock_.now();
  const std::vector<LimitState> states = current_states(ref, now);
  std::vector<LimitLeases> listing;
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    if (!algorithm::algorithm_of(ref.limits[i]).leases) continue;
    LimitLeases held{.limit_index = i};
    for (const algorithm::Lease& lease : std::get<algorithm::ConcurrencyState>(states[i]).leases) {
      if (lease.expires_at <= now) continue;
      ++held.count;
      held.units += lease.cost;
      held.leases.push_back(
          {.id = lease.id, .expires_after = lease.expires_at - now, .cost = lease.cost});
    }
    std::sort(held.leases.begin(), held.leases.end(), [](const auto& a, const auto& b) {
      return a.expires_after != b.expires_after ? a.expires_after < b.expires_after : a.id < b.id;
    });
    if (held.leases.size() > max) held.leases.resize(max);
    listing.push_back(std::move(held));
  }
  return listing;
}

Status MemoryStore::reset(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  const auto [key, hash, shard] = locate(ref);
  MutexLock lock(shard.mutex);
  // "As if never seen", as Redis's reset deletes the penalty key with the limits'. Open
  // reservations stay settleable, as their Redis keys stay: the record keeps them alone.
  Entry* entry = shard.find_live(hash, key, clock_.now());
  if (entry == nullptr) return {};
  if (entry->extras == nullptr || entry->extras->reservations.empty()) {
    shard.remove(entry);
    return {};
  }
  entry->extras->penalty.reset();
  entry->extras->penalty_expires_at = 0;
  entry->limits_held = false;
  shard.recount(entry);
  Shard::update_expiry(entry, ref.limits);
  return {};
}

StatusOr<PenaltyStatus> MemoryStore::penalty(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_penalty_ref(ref));
  const Micros now = clock_.now();
  const auto [key, hash, shard] = locate(ref);
  MutexLock lock(shard.mutex);
  const Entry* entry = shard.find_live(hash, key, now);
  const algorithm::PenaltyState state =
      live_penalty(entry != nullptr ? entry->extras.get() : nullptr, *ref.penalty, now);
  return penalty_status(*ref.penalty, state, now);
}

StatusOr<bool> MemoryStore::lift_penalty(const SubjectRef& ref) {
  SLUICE_RETURN_IF_ERROR(validate_penalty_ref(ref));
  const Micros now = clock_.now();
  const auto [key, hash, shard] = locate(ref);
  MutexLock lock(shard.mutex);
  Entry* entry = shard.find_live(hash, key, now);
  if (entry == nullptr || entry->extras == nullptr) return false;
  const bool live =
      live_penalty(entry->extras.get(), *ref.penalty, now) != algorithm::PenaltyState{};
  entry->extras->penalty.reset();
  entry->extras->penalty_expires_at = 0;
  if (entry->extras->empty()) entry->extras.reset();
  if (!entry->limits_held && entry->extras == nullptr) {
    shard.remove(entry);  // nothing left to hold
    return live;
  }
  shard.recount(entry);
  Shard::update_expiry(entry, ref.limits);
  return live;
}

MemoryStoreStats MemoryStore::stats() const {
  MemoryStoreStats stats;
  for (const auto& shard : shards_) {
    MutexLock lock(shard->mutex);
    stats.keys += shard->size();
    stats.refusals += shard->refusals();
    stats.evictions += shard->evictions();
    stats.expirations += shard->expirations();
    const auto [boxes, reservations] = shard->extras_counts();
    stats.penalty_boxes += boxes;
    stats.reservations += reservations;
  }
  stats.bytes = total_bytes_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace sluice::store
