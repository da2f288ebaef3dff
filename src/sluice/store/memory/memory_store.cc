// The memory store's decisions (acquire, release, renew, quota operations); its admin reads are
// in memory_admin.cc, its records in memory_record.h, its shards in memory_shard.h.
#include "sluice/store/memory/memory_store.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <optional>
#include <string>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"
#include "sluice/store/memory/memory_record.h"
#include "sluice/store/memory/memory_shard.h"

namespace sluice::store {
namespace {

using algorithm::Limit;
using algorithm::LimitState;
using memory::Entry;
using memory::Extras;
using memory::is_stale;
using memory::key_of;
using memory::latest_expiry;
using memory::live_penalty;
using memory::record_bytes;
using memory::refresh;
using memory::RefreshScope;
using memory::Reservation;

bool any_stale(std::span<const Limit> limits, std::span<const LimitState> states, Micros now) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (is_stale(limits[i], states[i], now)) return true;
  }
  return false;
}

// Whether a limit's state owns heap that grows with use (sliding log, concurrency): a decision
// on it may need room in the store, so it is made on a copy first.
bool may_grow(std::span<const Limit> limits) {
  for (const Limit& limit : limits) {
    if (algorithm::algorithm_of(limit).state_grows) return true;
  }
  return false;
}

// The answer when a new record finds no room: its policy's failure mode decides it.
Status store_full() {
  return Status(StatusCode::kResourceExhausted,
                "memory store: full (memory_max_keys / memory_max_bytes), and this policy holds "
                "its share of it; a new subject is decided by its policy's on_store_failure");
}

Status no_such_reservation() {
  return not_found(
      "reservation: unknown, already settled or expired (an expired reservation's estimate "
      "stays charged)");
}

// Fills `states` with the subject's limit states as a decision at `now` starts from: the
// record's (stale ones made initial) when it holds them, else initial ones.
void load_states(Entry* entry, std::span<const Limit> limits, Micros now,
                 std::vector<LimitState>& states) {
  states.clear();
  if (entry != nullptr && entry->limits_held && entry->state_count == limits.size()) {
    states.assign(entry->states().begin(), entry->states().end());
    refresh(limits, states, now);
  } else {
    for (const Limit& limit : limits) states.push_back(algorithm::initial_state(limit, now));
  }
}

// The subject's record with `limits.size()` states: `entry` itself, or null after dropping an
// entry made for another number of limits (the policy changed: its limits start afresh), whose
// extras (penalty box, reservations) are handed to `carried`.
template <typename Shard>
Entry* matching(Shard& shard, Entry* entry, std::span<const Limit> limits,
                std::unique_ptr<Extras>& carried) SLUICE_REQUIRES(shard.mutex) {
  if (entry == nullptr || entry->state_count == limits.size()) return entry;
  carried = std::move(entry->extras);
  shard.remove(entry);
  return nullptr;
}

// Sets (or, once expired, clears) the box in `extras`.
void put_penalty(Extras& extras, algorithm::PenaltyState state, const algorithm::Penalty& penalty,
                 Micros now) {
  const Micros expires = algorithm::penalty_expires_at(penalty, state);
  if (expires <= now) {
    extras.penalty.reset();
    extras.penalty_expires_at = 0;
  } else {
    extras.penalty = std::move(state);
    extras.penalty_expires_at = expires;
  }
}

// Forgets the reservations of `extras` that have expired by `now` (their estimates stay
// charged). Linear in the subject's reservations, which max_per_subject bounds.
void drop_expired_reservations(Extras* extras, Micros now) {
  if (extras == nullptr) return;
  std::erase_if(extras->reservations, [now](const Reservation& r) { return r.expires_at <= now; });
}

}  // namespace

MemoryStore::MemoryStore(const Clock& clock, MemoryStoreOptions options)
    : clock_(clock), reservation_limits_(options.reservations) {
  const std::size_t shard_count = std::bit_ceil(std::max<std::size_t>(1, options.shards));
  shard_shift_ = 64 - std::countr_zero(shard_count);
  for (std::size_t i = 0; i < shard_count; ++i) {
    shards_.push_back(std::make_unique<Shard>(total_keys_, total_bytes_,
                                              std::max<std::size_t>(1, options.max_keys),
                                              std::max<std::size_t>(1, options.max_bytes)));
  }
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shard_for(std::uint64_t hash) {
  // Top bits pick the shard, low bits the bucket, so both stay well spread.
  return *shards_[shard_shift_ == 64 ? 0 : hash >> shard_shift_];
}

StatusOr<Decision> MemoryStore::acquire(const SubjectRef& ref, std::int64_t cost) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  SLUICE_RETURN_IF_ERROR(algorithm::validate_cost(cost));
  const Micros now = clock_.now();
  const std::string lease =
      cost > 0 && algorithm::uses_leases(ref.limits) ? new_unique_id() : std::string();
  const auto [key, hash, shard] = locate(ref);

  Decision decision;
  MutexLock lock(shard.mutex);
  std::unique_ptr<Extras> carried;
  Entry* entry = matching(shard, shard.find_live(hash, key, now), ref.limits, carried);
  if (entry != nullptr && entry->limits_held && ref.penalty == nullptr && !may_grow(ref.limits) &&
      !any_stale(ref.limits, entry->states(), now)) {
    // The common case, in place: a decision on states that own no heap changes no byte count.
    decision = decision_from(algorithm::evaluate(ref.limits, entry->states(), cost, now, lease));
    Shard::update_expiry(entry, ref.limits);
    shard.touch(entry);
    if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
    return decision;
  }
  // Otherwise on a copy: the penalty box may still turn the verdict into a denial, a refreshed
  // initial state may only be stored by a charge, and growth needs room first.
  thread_local std::vector<LimitState> scratch;
  load_states(entry, ref.limits, now, scratch);
  const algorithm::PolicyVerdict evaluated =
      algorithm::evaluate(ref.limits, scratch, cost, now, lease);
  decision = decision_from(evaluated);
  algorithm::PenaltyState penalty;
  bool struck = false;
  if (ref.penalty != nullptr) {
    penalty =
        live_penalty(entry != nullptr ? entry->extras.get() : carried.get(), *ref.penalty, now);
    struck = algorithm::penalize(*ref.penalty, penalty, decision.verdict, cost, now);
  }
  // An allowed cost the penalty box turned into a denial is not stored; a denied cost a counting
  // window took (DeniedCost::kCounted) is.
  const bool charged = evaluated.wrote && (decision.verdict.allowed || !evaluated.verdict.allowed);
  if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
  if (!charged && !struck) {
    if (entry != nullptr) shard.touch(entry);
    shard.keep_carried(hash, key, ref.limits, std::move(carried), now);
    return decision;
  }
  if (entry != nullptr) {
    std::optional<algorithm::PenaltyState> before;
    if (struck) {
      if (entry->extras == nullptr) entry->extras = std::make_unique<Extras>();
      before = entry->extras->penalty;
      put_penalty(*entry->extras, std::move(penalty), *ref.penalty, now);
    }
    const std::span<const LimitState> next =
        charged ? std::span<const LimitState>(scratch) : entry->states();
    if (!shard.room_to_grow(entry, record_bytes(entry->key_size, next, entry->extras.get()), now)) {
      if (struck) {  // the denial stands, its strike unrecorded
        entry->extras->penalty = std::move(before);
        if (entry->extras->empty()) entry->extras.reset();
      }
      return charged ? store_full() : StatusOr<Decision>(decision);
    }
    shard.keep(entry, scratch, charged, ref.limits);
    return decision;
  }
  std::unique_ptr<Extras> extras = std::move(carried);
  if (struck) {
    if (extras == nullptr) extras = std::make_unique<Extras>();
    put_penalty(*extras, std::move(penalty), *ref.penalty, now);
  }
  if (extras != nullptr && extras->empty()) extras.reset();
  if (!charged) {
    // A denial that struck: placeholder states hold nothing until a charge stores real ones.
    load_states(nullptr, ref.limits, now, scratch);
    if (extras == nullptr) return decision;
  }
  if (shard.add(hash, key, scratch, charged, std::move(extras), ref.limits, now) == nullptr) {
    return charged ? store_full() : StatusOr<Decision>(decision);  // an unrecorded strike
  }
  return decision;
}

MemoryStore::Location MemoryStore::locate(const SubjectRef& ref) {
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  return {.key = key, .hash = hash, .shard = shard_for(hash)};
}

StatusOr<bool> MemoryStore::change_lease(const SubjectRef& ref, LeaseOperation operation,
                                         std::string_view lease) {
  SLUICE_RETURN_IF_ERROR(validate_subject_ref(ref));
  const Micros now = clock_.now();
  const auto [key, hash, shard] = locate(ref);
  MutexLock lock(shard.mutex);
  Entry* entry = shard.find_live(hash, key, now);
  if (entry == nullptr || !entry->limits_held || entry->state_count != ref.limits.size()) {
    return false;
  }
  refresh(ref.limits, entry->states(), now, RefreshScope::kConcurrencyLimits);
  const bool live = operation == LeaseOperation::kRelease
                        ? algorithm::release_lease(ref.limits, entry->states(), lease, now)
                        : algorithm::renew_lease(ref.limits, entry->states(), lease, now);
  shard.recount(entry);
  Shard::update_expiry(entry, ref.limits);
  if (operation == LeaseOperation::kRenew) shard.touch(entry);  // a renewal is use
  return live;
}

StatusOr<Decision> MemoryStore::apply_quota(const SubjectRef& ref, const QuotaRequest& request) {
  SLUICE_RETURN_IF_ERROR(validate_quota_request(ref, request));
  SLUICE_RETURN_IF_ERROR(validate_reservation_ttl(request, reservation_limits_));
  const Micros now = clock_.now();
  const auto [key, hash, shard] = locate(ref);

  MutexLock lock(shard.mutex);
  std::unique_ptr<Extras> carried;
  Entry* entry = matching(shard, shard.find_live(hash, key, now), ref.limits, carried);
  Extras* extras = entry != nullptr ? entry->extras.get() : carried.get();
  drop_expired_reservations(extras, now);
  // What the limits see: a settle charges or refunds the difference from its estimate.
  bool charging =
      request.operation == QuotaOperation::kCharge || request.operation == QuotaOperation::kReserve;
  std::int64_t cost = request.cost;
  std::optional<Reservation> settled;
  if (request.operation == QuotaOperation::kSettle) {
    if (extras != nullptr) {
      auto& held = extras->reservations;
      const auto found = std::find_if(held.begin(), held.end(), [&](const Reservation& r) {
        return r.id == request.reservation;
      });
      if (found != held.end()) {
        settled = std::move(*found);
        held.erase(found);
      }
    }
    if (!settled) {
      if (entry != nullptr) shard.recount(entry);  // expired reservations dropped
      shard.keep_carried(hash, key, ref.limits, std::move(carried), now);
      return no_such_reservation();
    }
    charging = request.cost >= settled->estimate;
    cost = charging ? request.cost - settled->estimate : settled->estimate - request.cost;
  }
  if (request.operation == QuotaOperation::kReserve && extras != nullptr &&
      extras->reservations.size() >= reservation_limits_.max_per_subject) {
    if (entry != nullptr) shard.recount(entry);
    shard.keep_carried(hash, key, ref.limits, std::move(carried), now);
    return too_many_reservations(reservation_limits_);
  }
  thread_local std::vector<LimitState> scratch;
  load_states(entry, ref.limits, now, scratch);
  const algorithm::PolicyVerdict verdict =
      charging  ? algorithm::charge(ref.limits, scratch, cost, request.max_debt, now)
      : settled ? algorithm::settle_refund(ref.limits, scratch, cost, settled->charged_at, now)
                : algorithm::refund(ref.limits, scratch, cost, now);
  const bool reserving = request.operation == QuotaOperation::kReserve && verdict.verdict.allowed;
  // As acquire: only a change is stored (a refused charge or a peek leaves the limits as they
  // were); a state back to unused is the same as none.
  const bool changes_limits = cost > 0 && verdict.verdict.allowed &&
                              (entry != nullptr || latest_expiry(ref.limits, scratch) > now);
  if (reserving) {
    if (entry == nullptr && carried == nullptr) carried = std::make_unique<Extras>();
    Extras& into =
        entry != nullptr
            ? (entry->extras ? *entry->extras : *(entry->extras = std::make_unique<Extras>()))
            : *carried;
    auto& held = into.reservations;
    // Doubling, as push_back would, but by hand so the byte count below is what is held.
    if (held.size() == held.capacity()) held.reserve(std::max<std::size_t>(4, 2 * held.size()));
    held.push_back({.id = std::string(request.reservation),
                    .estimate = request.cost,
                    .charged_at = now,
                    .expires_at = now + request.reservation_ttl});
  }
  if (entry != nullptr) {
    const std::span<const LimitState> next =
        changes_limits ? std::span<const LimitState>(scratch) : entry->states();
    if (!shard.room_to_grow(entry, record_bytes(entry->key_size, next, entry->extras.get()), now)) {
      if (reserving) entry->extras->reservations.pop_back();
      if (settled) entry->extras->reservations.push_back(*std::move(settled));
      if (entry->extras != nullptr && entry->extras->empty()) entry->extras.reset();
      shard.recount(entry);
      return store_full();
    }
    shard.keep(entry, scratch, changes_limits, ref.limits);
    return decision_from(verdict);
  }
  std::unique_ptr<Extras> extras_to_keep = std::move(carried);
  if (extras_to_keep != nullptr && extras_to_keep->empty()) extras_to_keep.reset();
  if (!changes_limits) {
    if (extras_to_keep == nullptr) return decision_from(verdict);
    load_states(nullptr, ref.limits, now, scratch);  // placeholders
  }
  if (shard.add(hash, key, scratch, changes_limits, std::move(extras_to_keep), ref.limits, now) ==
      nullptr) {
    return store_full();
  }
  return decision_from(verdict);
}

}  // namespace sluice::store
