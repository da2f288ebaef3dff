#include "sluice/store/memory/memory_store.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"

namespace sluice::store {
namespace {

using algorithm::Limit;
using algorithm::LimitState;

// One subject's state in a single allocation: this header, then LimitState[state_count], then
// the key bytes. Keeping it to one block is what holds an idle single-limit subject to
// ~100 bytes beyond its key.
struct Entry {
  Entry* chain_next = nullptr;  // next entry in the same hash bucket
  Entry* newer = nullptr;       // neighbours in least-recently-used order
  Entry* older = nullptr;
  Micros expires_at = 0;
  std::uint64_t hash = 0;
  std::uint32_t key_size = 0;
  std::uint32_t state_count = 0;

  std::span<LimitState> states() {
    return {std::launder(reinterpret_cast<LimitState*>(this + 1)), state_count};
  }
  std::string_view key() {
    return {reinterpret_cast<const char*>(states().data() + state_count), key_size};
  }

  static Entry* create(std::uint64_t hash, std::string_view key, std::span<LimitState> states) {
    const std::size_t bytes = sizeof(Entry) + states.size() * sizeof(LimitState) + key.size();
    void* memory = ::operator new(bytes);
    auto* entry = new (memory) Entry{.hash = hash,
                                     .key_size = static_cast<std::uint32_t>(key.size()),
                                     .state_count = static_cast<std::uint32_t>(states.size())};
    auto* slot = reinterpret_cast<LimitState*>(entry + 1);
    for (LimitState& state : states) new (slot++) LimitState(std::move(state));
    std::memcpy(static_cast<void*>(slot), key.data(), key.size());
    return entry;
  }

  static void destroy(Entry* entry) {
    for (LimitState& state : entry->states()) state.~LimitState();
    entry->~Entry();
    ::operator delete(entry);
  }
};
static_assert(sizeof(Entry) % alignof(LimitState) == 0);

// Whether limit i's stored state no longer applies: it is of another algorithm (the policy
// changed) or past its expiry (what a Redis key's TTL would have dropped).
bool is_stale(const Limit& limit, const LimitState& state, Micros now) {
  return !algorithm::state_fits(limit, state) || algorithm::expires_at(limit, state) <= now;
}

bool any_stale(std::span<const Limit> limits, std::span<const LimitState> states, Micros now) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (is_stale(limits[i], states[i], now)) return true;
  }
  return false;
}

enum class RefreshScope { kAllLimits, kConcurrencyLimits };

// Replaces stale states with the limit's initial state at `now`.
void refresh(std::span<const Limit> limits, std::span<LimitState> states, Micros now,
             RefreshScope scope = RefreshScope::kAllLimits) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (scope == RefreshScope::kConcurrencyLimits &&
        !std::holds_alternative<algorithm::Concurrency>(limits[i])) {
      continue;
    }
    if (is_stale(limits[i], states[i], now)) states[i] = algorithm::initial_state(limits[i], now);
  }
}

// The answer when a new subject finds no room: its policy's failure mode decides it.
Status store_full() {
  return Status(StatusCode::kResourceExhausted,
                "memory store: full of live limits (memory_max_keys subjects); a new subject is "
                "decided by its policy's on_store_failure");
}

Micros latest_expiry(std::span<const Limit> limits, std::span<LimitState> states) {
  Micros latest = 0;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    latest = std::max(latest, algorithm::expires_at(limits[i], states[i]));
  }
  return latest;
}

Status no_such_reservation() {
  return not_found(
      "reservation: unknown, already settled or expired (an expired reservation's estimate "
      "stays charged)");
}

// The map key for (policy, subject), built in a per-thread buffer to avoid an allocation.
std::string_view key_of(const SubjectRef& ref) {
  thread_local std::string buffer;
  buffer.assign(ref.policy).push_back(':');
  buffer.append(ref.subject);
  return buffer;
}

}  // namespace

// A hash table with chained buckets and an intrusive LRU list. Callers hold `mutex`.
class MemoryStore::Shard {
 public:
  // How many of the least recently used subjects make_room checks for expired state: a couple on
  // every insert, more when the store is full.
  static constexpr int kInsertScan = 2;
  static constexpr int kFullScan = 64;

  // `total` counts subjects across all shards; the store as a whole never holds more than
  // `max_keys`.
  Shard(std::atomic<std::size_t>& total, std::size_t max_keys)
      : total_(total), max_keys_(max_keys), buckets_(16, nullptr) {}
  ~Shard() {
    for (Entry* entry = newest_; entry != nullptr;) {
      Entry* next = entry->older;
      Entry::destroy(entry);
      entry = next;
    }
  }

  // The entry for `key` if present and not expired at `now` (an expired one is dropped).
  Entry* find_live(std::uint64_t hash, std::string_view key, Micros now) {
    for (Entry* entry = bucket(hash); entry != nullptr; entry = entry->chain_next) {
      if (entry->hash != hash || entry->key() != key) continue;
      if (entry->expires_at > now) return entry;
      remove(entry);
      ++expirations_;
      return nullptr;
    }
    return nullptr;
  }

  // Takes room for one more subject; false (counted as a refusal) when the store holds max_keys
  // subjects and none of this shard's kFullScan least recently used ones has expired. Live
  // state is never dropped to make room: evicting it would reset someone's limit, which is what
  // a flood of new subjects would then do on purpose.
  bool make_room(Micros now) {
    drop_expired(now, kInsertScan);
    // Counted first and given back on refusal, so concurrent inserts never overshoot the bound.
    if (total_.fetch_add(1, std::memory_order_relaxed) < max_keys_ ||
        drop_expired(now, kFullScan)) {
      return true;
    }
    total_.fetch_sub(1, std::memory_order_relaxed);
    ++refusals_;
    return false;
  }

  // A new subject's entry holding `states` (after make_room); false when there is no room.
  bool add(std::uint64_t hash, std::string_view key, std::span<LimitState> states,
           std::span<const Limit> limits, Micros now) {
    if (!make_room(now)) return false;
    Entry* created = Entry::create(hash, key, states);
    created->expires_at = latest_expiry(limits, created->states());
    insert(created);
    return true;
  }

  // Links a new entry, after make_room.
  void insert(Entry* entry) {
    if (size_ + 1 > buckets_.size()) grow();
    Entry*& head = bucket(entry->hash);
    entry->chain_next = head;
    head = entry;
    link_newest(entry);
    ++size_;
  }

  void remove(Entry* entry) {
    Entry** link = &bucket(entry->hash);
    while (*link != entry) link = &(*link)->chain_next;
    *link = entry->chain_next;
    unlink(entry);
    --size_;
    total_.fetch_sub(1, std::memory_order_relaxed);
    Entry::destroy(entry);
  }

  void touch(Entry* entry) {
    if (entry == newest_) return;
    unlink(entry);
    link_newest(entry);
  }

  // Reservations (QuotaOperation::kReserve) by subject key, apart from the limit states: a
  // reservation outlives neither its TTL nor a settle, whatever the subject's state does.
  struct Reservation {
    std::string id;
    std::int64_t estimate;
    Micros expires_at;
  };
  void add_reservation(std::string_view key, std::string_view id, std::int64_t estimate,
                       Micros expires_at) {
    std::string subject(key);
    reservations_[subject].push_back(
        {.id = std::string(id), .estimate = estimate, .expires_at = expires_at});
    reservation_expiry_.emplace(expires_at, std::move(subject));
  }
  // Removes reservation `id` of `key` and returns its estimate; nullopt if unknown or expired.
  std::optional<std::int64_t> take_reservation(std::string_view key, std::string_view id,
                                               Micros now) {
    const auto subject = reservations_.find(std::string(key));
    if (subject == reservations_.end()) return std::nullopt;
    std::vector<Reservation>& held = subject->second;
    for (std::size_t i = 0; i < held.size(); ++i) {
      if (held[i].id != id) continue;
      const Reservation taken = held[i];
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      if (held.empty()) reservations_.erase(subject);
      if (taken.expires_at <= now) return std::nullopt;
      return taken.estimate;
    }
    return std::nullopt;
  }
  // Forgets every reservation expired by `now` (their estimates stay charged).
  void drop_expired_reservations(Micros now) {
    while (!reservation_expiry_.empty() && reservation_expiry_.begin()->first <= now) {
      const auto due = reservation_expiry_.begin();
      const auto subject = reservations_.find(due->second);
      if (subject != reservations_.end()) {
        std::erase_if(subject->second, [now](const Reservation& r) { return r.expires_at <= now; });
        if (subject->second.empty()) reservations_.erase(subject);
      }
      reservation_expiry_.erase(due);
    }
  }

  // Penalty boxes (algorithm/penalty.h) by subject key, apart from the limit states: only
  // subjects that were denied have one. A copy of the live state (empty when none or expired).
  algorithm::PenaltyState penalty_state(std::string_view key, const algorithm::Penalty& penalty,
                                        Micros now) {
    const auto found = penalties_.find(std::string(key));
    if (found == penalties_.end()) return {};
    if (algorithm::penalty_expires_at(penalty, found->second) <= now) {
      penalties_.erase(found);
      return {};
    }
    return found->second;
  }
  void store_penalty(std::string_view key, algorithm::PenaltyState state,
                     const algorithm::Penalty& penalty, Micros now) {
    if (algorithm::penalty_expires_at(penalty, state) <= now) {
      penalties_.erase(std::string(key));
      return;
    }
    penalties_.insert_or_assign(std::string(key), std::move(state));
    // Amortized sweep, so subjects denied once and never seen again do not pile up: whenever the
    // map has doubled since the last sweep, drop what has expired (by the penalty of this call:
    // a subject of another policy with a longer quiet period is kept until its own next access).
    if (penalties_.size() >= penalty_sweep_at_) {
      std::erase_if(penalties_, [&](const auto& entry) {
        return algorithm::penalty_expires_at(penalty, entry.second) <= now &&
               entry.first.starts_with(key.substr(0, key.find(':') + 1));
      });
      penalty_sweep_at_ = std::max<std::size_t>(1024, 2 * penalties_.size());
    }
  }
  bool erase_penalty(std::string_view key) { return penalties_.erase(std::string(key)) > 0; }
  std::size_t penalty_boxes() const { return penalties_.size(); }

  std::mutex mutex;
  std::size_t size() const { return size_; }
  std::uint64_t refusals() const { return refusals_; }
  std::uint64_t expirations() const { return expirations_; }

 private:
  // Drops every expired subject among the `scan` least recently used; whether any was. Idle
  // subjects gather at the old end, so this keeps memory proportional to live subjects without
  // a background thread.
  bool drop_expired(Micros now, int scan) {
    bool dropped = false;
    Entry* entry = oldest_;
    for (int i = 0; i < scan && entry != nullptr; ++i) {
      Entry* newer = entry->newer;
      if (entry->expires_at <= now) {
        remove(entry);
        ++expirations_;
        dropped = true;
      }
      entry = newer;
    }
    return dropped;
  }

  Entry*& bucket(std::uint64_t hash) { return buckets_[hash & (buckets_.size() - 1)]; }

  void grow() {
    std::vector<Entry*> old(buckets_.size() * 2, nullptr);
    old.swap(buckets_);
    for (Entry* head : old) {
      while (head != nullptr) {
        Entry* next = head->chain_next;
        Entry*& slot = bucket(head->hash);
        head->chain_next = slot;
        slot = head;
        head = next;
      }
    }
  }

  void link_newest(Entry* entry) {
    entry->newer = nullptr;
    entry->older = newest_;
    if (newest_ != nullptr) newest_->newer = entry;
    newest_ = entry;
    if (oldest_ == nullptr) oldest_ = entry;
  }

  void unlink(Entry* entry) {
    (entry->newer != nullptr ? entry->newer->older : newest_) = entry->older;
    (entry->older != nullptr ? entry->older->newer : oldest_) = entry->newer;
  }

  std::atomic<std::size_t>& total_;
  std::size_t max_keys_;
  std::vector<Entry*> buckets_;
  std::size_t size_ = 0;
  Entry* newest_ = nullptr;
  Entry* oldest_ = nullptr;
  std::uint64_t refusals_ = 0;
  std::uint64_t expirations_ = 0;
  std::unordered_map<std::string, std::vector<Reservation>> reservations_;
  std::multimap<Micros, std::string> reservation_expiry_;  // when to look at a subject's
  std::unordered_map<std::string, algorithm::PenaltyState> penalties_;
  std::size_t penalty_sweep_at_ = 1024;
};

MemoryStore::MemoryStore(const Clock& clock, MemoryStoreOptions options) : clock_(clock) {
  const std::size_t shard_count = std::bit_ceil(std::max<std::size_t>(1, options.shards));
  shard_shift_ = 64 - std::countr_zero(shard_count);
  for (std::size_t i = 0; i < shard_count; ++i) {
    shards_.push_back(
        std::make_unique<Shard>(total_keys_, std::max<std::size_t>(1, options.max_keys)));
  }
}

MemoryStore::~MemoryStore() = default;

MemoryStore::Shard& MemoryStore::shard_for(std::uint64_t hash) {
  // Top bits pick the shard, low bits the bucket, so both stay well spread.
  return *shards_[shard_shift_ == 64 ? 0 : hash >> shard_shift_];
}

StatusOr<Decision> MemoryStore::acquire(const SubjectRef& ref, std::int64_t cost) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  if (Status status = algorithm::validate_cost(cost); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string lease =
      cost > 0 && algorithm::uses_leases(ref.limits) ? new_lease_id() : std::string();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);

  Decision decision;
  std::lock_guard lock(shard.mutex);
  if (ref.penalty != nullptr) {
    // The limits decide on a copy; the penalty box may still turn the verdict into a denial, and
    // only a request that stays allowed is charged.
    Entry* entry = shard.find_live(hash, key, now);
    if (entry != nullptr && entry->state_count != ref.limits.size()) {
      shard.remove(entry);
      entry = nullptr;
    }
    thread_local std::vector<LimitState> scratch;
    scratch.clear();
    if (entry != nullptr) {
      scratch.assign(entry->states().begin(), entry->states().end());
      refresh(ref.limits, scratch, now);
    } else {
      for (const Limit& limit : ref.limits) scratch.push_back(algorithm::initial_state(limit, now));
    }
    decision = decision_from(algorithm::evaluate(ref.limits, scratch, cost, now, lease));
    algorithm::PenaltyState penalty = shard.penalty_state(key, *ref.penalty, now);
    if (algorithm::penalize(*ref.penalty, penalty, decision.verdict, cost, now)) {
      shard.store_penalty(key, std::move(penalty), *ref.penalty, now);
    }
    if (decision.verdict.allowed && cost > 0) {
      if (entry != nullptr) {
        std::move(scratch.begin(), scratch.end(), entry->states().begin());
        entry->expires_at = latest_expiry(ref.limits, entry->states());
        shard.touch(entry);
      } else {
        if (!shard.add(hash, key, scratch, ref.limits, now)) return store_full();
      }
    }
    if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
    return decision;
  }
  Entry* entry = shard.find_live(hash, key, now);
  if (entry != nullptr && entry->state_count != ref.limits.size()) {
    shard.remove(entry);  // the policy changed its number of limits: start afresh
    entry = nullptr;
  }
  if (entry != nullptr) {
    std::span<LimitState> states = entry->states();
    if (!any_stale(ref.limits, states, now)) {
      decision = decision_from(algorithm::evaluate(ref.limits, states, cost, now, lease));
    } else {
      // An initial state depends on when it is made (a warm-up bucket's TAT), so like Redis only
      // a charged request may store one: a peek or a denial leaves the entry as it was.
      thread_local std::vector<LimitState> scratch;
      scratch.assign(states.begin(), states.end());
      refresh(ref.limits, scratch, now);
      decision = decision_from(algorithm::evaluate(ref.limits, scratch, cost, now, lease));
      if (decision.verdict.allowed && cost > 0) {
        std::move(scratch.begin(), scratch.end(), states.begin());
      }
    }
    entry->expires_at = latest_expiry(ref.limits, states);
    shard.touch(entry);
  } else {
    thread_local std::vector<LimitState> scratch;
    scratch.clear();
    for (const Limit& limit : ref.limits) scratch.push_back(algorithm::initial_state(limit, now));
    decision = decision_from(algorithm::evaluate(ref.limits, scratch, cost, now, lease));
    if (decision.verdict.allowed && cost > 0) {
      if (!shard.add(hash, key, scratch, ref.limits, now)) return store_full();
    }
  }
  if (decision.verdict.allowed && !lease.empty()) decision.lease = lease;
  return decision;
}

StatusOr<bool> MemoryStore::release(const SubjectRef& ref, std::string_view lease) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  Entry* entry = shard.find_live(hash, key, now);
  if (entry == nullptr || entry->state_count != ref.limits.size()) return false;
  refresh(ref.limits, entry->states(), now, RefreshScope::kConcurrencyLimits);
  const bool released = algorithm::release_lease(ref.limits, entry->states(), lease, now);
  entry->expires_at = latest_expiry(ref.limits, entry->states());
  return released;
}

StatusOr<bool> MemoryStore::renew(const SubjectRef& ref, std::string_view lease) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  Entry* entry = shard.find_live(hash, key, now);
  if (entry == nullptr || entry->state_count != ref.limits.size()) return false;
  refresh(ref.limits, entry->states(), now, RefreshScope::kConcurrencyLimits);
  const bool renewed = algorithm::renew_lease(ref.limits, entry->states(), lease, now);
  entry->expires_at = latest_expiry(ref.limits, entry->states());
  shard.touch(entry);
  return renewed;
}

StatusOr<Decision> MemoryStore::apply_quota(const SubjectRef& ref, const QuotaRequest& request) {
  if (Status status = validate_quota_request(ref, request); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);

  std::lock_guard lock(shard.mutex);
  shard.drop_expired_reservations(now);
  // What the limits see: a settle charges or refunds the difference from its estimate.
  bool charging =
      request.operation == QuotaOperation::kCharge || request.operation == QuotaOperation::kReserve;
  std::int64_t cost = request.cost;
  if (request.operation == QuotaOperation::kSettle) {
    const std::optional<std::int64_t> estimate =
        shard.take_reservation(key, request.reservation, now);
    if (!estimate) return no_such_reservation();
    charging = request.cost >= *estimate;
    cost = charging ? request.cost - *estimate : *estimate - request.cost;
  }
  Entry* entry = shard.find_live(hash, key, now);
  if (entry != nullptr && entry->state_count != ref.limits.size()) {
    shard.remove(entry);  // the policy changed its number of limits: start afresh
    entry = nullptr;
  }
  thread_local std::vector<LimitState> scratch;
  scratch.clear();
  if (entry != nullptr) {
    scratch.assign(entry->states().begin(), entry->states().end());
    refresh(ref.limits, scratch, now);
  } else {
    for (const Limit& limit : ref.limits) scratch.push_back(algorithm::initial_state(limit, now));
  }
  const algorithm::PolicyVerdict verdict =
      charging ? algorithm::charge(ref.limits, scratch, cost, request.max_debt, now)
               : algorithm::refund(ref.limits, scratch, cost, now);
  if (request.operation == QuotaOperation::kReserve && verdict.verdict.allowed) {
    shard.add_reservation(key, request.reservation, request.cost, now + request.reservation_ttl);
  }
  // As acquire: only a change is stored (a refused charge or a peek leaves the entry as it was).
  if (cost > 0 && verdict.verdict.allowed) {
    if (entry != nullptr) {
      std::move(scratch.begin(), scratch.end(), entry->states().begin());
      entry->expires_at = latest_expiry(ref.limits, entry->states());
      shard.touch(entry);
    } else if (latest_expiry(ref.limits, scratch) > now) {  // else equal to no state at all
      if (!shard.add(hash, key, scratch, ref.limits, now)) return store_full();
    }
  }
  return decision_from(verdict);
}

std::vector<LimitState> MemoryStore::current_states(const SubjectRef& ref, Micros now) {
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::vector<LimitState> states;
  {
    std::lock_guard lock(shard.mutex);
    Entry* entry = shard.find_live(hash, key, now);
    if (entry != nullptr && entry->state_count == ref.limits.size()) {
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
  StatusOr<DryRun> peek = dry_run(ref, 0);
  if (!peek.ok()) return peek.status();
  return std::move(peek->limits);
}

StatusOr<DryRun> MemoryStore::dry_run(const SubjectRef& ref, std::int64_t cost) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  if (Status status = algorithm::validate_cost(cost); !status.ok()) return status;
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
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::vector<LimitState> states = current_states(ref, now);
  std::vector<LimitLeases> listing;
  for (std::size_t i = 0; i < ref.limits.size(); ++i) {
    if (!std::holds_alternative<algorithm::Concurrency>(ref.limits[i])) continue;
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
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  if (Entry* entry = shard.find_live(hash, key, clock_.now()); entry != nullptr) {
    shard.remove(entry);
  }
  shard.erase_penalty(key);  // "as if never seen", as Redis's reset deletes the penalty key
  return {};
}

StatusOr<PenaltyStatus> MemoryStore::penalty(const SubjectRef& ref) {
  if (Status status = validate_penalty_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  Shard& shard = shard_for(std::hash<std::string_view>{}(key));
  std::lock_guard lock(shard.mutex);
  const algorithm::PenaltyState state = shard.penalty_state(key, *ref.penalty, now);
  return penalty_status(*ref.penalty, state, now);
}

StatusOr<bool> MemoryStore::lift_penalty(const SubjectRef& ref) {
  if (Status status = validate_penalty_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  Shard& shard = shard_for(std::hash<std::string_view>{}(key));
  std::lock_guard lock(shard.mutex);
  const bool live = shard.penalty_state(key, *ref.penalty, now) != algorithm::PenaltyState{};
  shard.erase_penalty(key);
  return live;
}

MemoryStoreStats MemoryStore::stats() const {
  MemoryStoreStats stats;
  for (const auto& shard : shards_) {
    std::lock_guard lock(shard->mutex);
    stats.keys += shard->size();
    stats.refusals += shard->refusals();
    stats.expirations += shard->expirations();
    stats.penalty_boxes += shard->penalty_boxes();
  }
  return stats;
}

}  // namespace sluice::store
