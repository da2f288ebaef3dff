#include "sluice/store/memory/memory_store.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>

#include "sluice/algorithm/catalogue.h"
#include "sluice/algorithm/quota.h"
#include "sluice/algorithm/validate.h"
#include "sluice/core/key.h"

namespace sluice::store {
namespace {

using algorithm::Limit;
using algorithm::LimitState;

// An open reservation (QuotaOperation::kReserve) of a subject.
struct Reservation {
  std::string id;
  std::int64_t estimate = 0;
  Micros charged_at = 0;  // the clock when its estimate was charged (settle_refund's window)
  Micros expires_at = 0;
};

// What a record holds beside its limit states, allocated only for subjects that have any: a
// penalty box (only subjects that were denied have one) and open reservations. They live in the
// subject's record so that they count in the store's bounds and expire, and are evicted, with it.
struct Extras {
  std::optional<algorithm::PenaltyState> penalty;
  Micros penalty_expires_at = 0;
  std::vector<Reservation> reservations;  // at most ReservationLimits::max_per_subject
  bool empty() const { return !penalty && reservations.empty(); }
};

// A policy's usage of one shard (the fair-share rule, memory_store.h).
struct PolicyShare {
  std::size_t bytes = 0;
  std::size_t records = 0;
};

// One subject's record in a single allocation: this header, then LimitState[state_count], then
// the key bytes. Keeping it to one block is what holds an idle single-limit subject to about
// 150 bytes beyond its key.
struct Entry {
  Entry* chain_next = nullptr;  // next entry in the same hash bucket
  Entry* newer = nullptr;       // neighbours in least-recently-used order
  Entry* older = nullptr;
  Micros expires_at = 0;  // when every part of the record is back to unused
  std::uint64_t hash = 0;
  std::unique_ptr<Extras> extras;
  // Packed into one word, so a record costs 8 bytes more than before it had extras.
  std::uint32_t bytes = 0;       // as counted against max_bytes (record_bytes; < 4 GiB)
  std::uint16_t key_size = 0;    // policy + ':' + subject: at most 128 + 1 + 1 024 bytes
  std::uint8_t state_count = 0;  // validate_subject_ref: at most kMaxLimitsPerRef
  // False: the states are placeholders, as if absent (the record holds only a penalty box or
  // reservations). An initial state depends on when it is made (a warm-up bucket's TAT), so like
  // Redis only a charged request may store one.
  bool limits_held = false;

  std::span<LimitState> states() {
    return {std::launder(reinterpret_cast<LimitState*>(this + 1)), state_count};
  }
  std::string_view key() {
    return {reinterpret_cast<const char*>(states().data() + state_count), key_size};
  }
  std::string_view policy() {
    const std::string_view k = key();
    return k.substr(0, k.find(':'));
  }

  static std::size_t block_size(std::size_t states, std::size_t key) {
    return sizeof(Entry) + states * sizeof(LimitState) + key;
  }

  static Entry* create(std::uint64_t hash, std::string_view key, std::span<LimitState> states) {
    void* memory = ::operator new(block_size(states.size(), key.size()));
    auto* entry = new (memory) Entry{.hash = hash,
                                     .key_size = static_cast<std::uint16_t>(key.size()),
                                     .state_count = static_cast<std::uint8_t>(states.size())};
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

// ---- what a record costs, in bytes (MemoryStoreOptions::max_bytes) ----
// glibc's malloc: a chunk is the request plus an 8-byte header, rounded up to 16, at least 32.
std::size_t allocation(std::size_t request) {
  if (request == 0) return 0;
  return std::max<std::size_t>(32, (request + 8 + 15) / 16 * 16);
}
// A std::string's own buffer when it outgrows the in-object one (15 characters in libstdc++).
std::size_t string_heap(const std::string& text) {
  return text.capacity() > 15 ? allocation(text.capacity() + 1) : 0;
}
// The heap a limit state owns beyond its slot in the record: a sliding log's entries, a
// concurrency limit's leases and their ids.
std::size_t state_heap(const LimitState& state) {
  if (const auto* entries = algorithm::log_entries(state)) {
    return allocation(entries->capacity() * sizeof(algorithm::LogEntry));
  }
  if (const auto* leases = algorithm::held_leases(state)) {
    std::size_t bytes = allocation(leases->capacity() * sizeof(algorithm::Lease));
    for (const algorithm::Lease& lease : *leases) bytes += string_heap(lease.id);
    return bytes;
  }
  return 0;
}
std::size_t extras_bytes(const Extras* extras) {
  if (extras == nullptr) return 0;
  std::size_t bytes = allocation(sizeof(Extras));
  if (extras->penalty) bytes += allocation(extras->penalty->strikes.capacity() * sizeof(Micros));
  bytes += allocation(extras->reservations.capacity() * sizeof(Reservation));
  for (const Reservation& r : extras->reservations) bytes += string_heap(r.id);
  return bytes;
}
// The hash table's bucket array holds between one and two pointers per record.
constexpr std::size_t kBucketBytes = 2 * sizeof(void*);
std::size_t record_bytes(std::size_t key_size, std::span<const LimitState> states,
                         const Extras* extras) {
  std::size_t bytes = allocation(Entry::block_size(states.size(), key_size)) + kBucketBytes;
  for (const LimitState& state : states) bytes += state_heap(state);
  return bytes + extras_bytes(extras);
}

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

// Whether a limit's state owns heap that grows with use (sliding log, concurrency): a decision
// on it may need room in the store, so it is made on a copy first.
bool may_grow(std::span<const Limit> limits) {
  for (const Limit& limit : limits) {
    if (algorithm::algorithm_of(limit).state_grows) return true;
  }
  return false;
}

enum class RefreshScope { kAllLimits, kConcurrencyLimits };

// Replaces stale states with the limit's initial state at `now`.
void refresh(std::span<const Limit> limits, std::span<LimitState> states, Micros now,
             RefreshScope scope = RefreshScope::kAllLimits) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (scope == RefreshScope::kConcurrencyLimits && !algorithm::algorithm_of(limits[i]).leases) {
      continue;
    }
    if (is_stale(limits[i], states[i], now)) states[i] = algorithm::initial_state(limits[i], now);
  }
}

// The answer when a new record finds no room: its policy's failure mode decides it.
Status store_full() {
  return Status(StatusCode::kResourceExhausted,
                "memory store: full (memory_max_keys / memory_max_bytes), and this policy holds "
                "its share of it; a new subject is decided by its policy's on_store_failure");
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

}  // namespace

// A hash table with chained buckets and an intrusive LRU list. Callers hold `mutex`.
class MemoryStore::Shard {
 public:
  // How many of the least recently used records make_room checks for expired state: a couple on
  // every insert, more when the store is full.
  static constexpr int kInsertScan = 2;
  static constexpr int kFullScan = 64;
  // Eviction (the fair-share rule): of the policy holding the most, the record expiring soonest
  // among the first kEvictSample of its records met within kEvictScan of the LRU end.
  static constexpr int kEvictScan = 512;
  static constexpr int kEvictSample = 16;
  // Evictions one insert may make before it is refused (a record larger than many others).
  static constexpr int kMaxEvictions = 64;

  // `keys` and `bytes` count across all shards; the store as a whole never holds more than
  // `max_keys` records or `max_bytes` bytes.
  Shard(std::atomic<std::size_t>& keys, std::atomic<std::size_t>& bytes, std::size_t max_keys,
        std::size_t max_bytes)
      : total_keys_(keys),
        total_bytes_(bytes),
        max_keys_(max_keys),
        max_bytes_(max_bytes),
        buckets_(16, nullptr) {}
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

  // Takes room for `bytes` more (and `keys` more records: 0 or 1) on behalf of `policy`, never
  // dropping `keep`; false (counted as a refusal) when the fair-share rule refuses.
  bool make_room(std::string_view policy, std::size_t keys, std::size_t bytes, const Entry* keep,
                 Micros now) {
    drop_expired(now, kInsertScan, keep);
    for (int evicted = 0;; ++evicted) {
      // Counted first and given back on refusal, so concurrent inserts never overshoot.
      const std::size_t held_keys = total_keys_.fetch_add(keys, std::memory_order_relaxed);
      const std::size_t held_bytes = total_bytes_.fetch_add(bytes, std::memory_order_relaxed);
      if (held_keys + keys <= max_keys_ && held_bytes + bytes <= max_bytes_) return true;
      total_keys_.fetch_sub(keys, std::memory_order_relaxed);
      total_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      if (drop_expired(now, kFullScan, keep)) continue;
      if (evicted < kMaxEvictions && evict_for(policy, keep)) continue;
      ++refusals_;
      return false;
    }
  }

  // Links a new record holding `states` (as the limits' when `held`) and `extras`, after taking
  // room for it; false (nothing changed) when there is none.
  Entry* add(std::uint64_t hash, std::string_view key, std::span<LimitState> states, bool held,
             std::unique_ptr<Extras> extras, std::span<const Limit> limits, Micros now) {
    const std::size_t bytes = record_bytes(key.size(), states, extras.get());
    const std::string_view policy = key.substr(0, key.find(':'));
    if (!make_room(policy, 1, bytes, nullptr, now)) return nullptr;
    Entry* created = Entry::create(hash, key, states);
    created->limits_held = held;
    created->extras = std::move(extras);
    created->bytes = static_cast<std::uint32_t>(bytes);
    auto share = shares_.find(policy);
    if (share == shares_.end()) share = shares_.emplace(std::string(policy), PolicyShare{}).first;
    share->second.bytes += bytes;
    ++share->second.records;
    bytes_ += bytes;
    update_expiry(created, limits);
    insert(created);
    return created;
  }

  // After a policy changed its number of limits (its record was dropped): a record holding only
  // the extras it carried, when they hold anything, so its box and reservations outlive the
  // change. Best effort: without room they are gone, as the limits' state is.
  void keep_carried(std::uint64_t hash, std::string_view key, std::span<const Limit> limits,
                    std::unique_ptr<Extras> carried, Micros now) {
    if (carried == nullptr || carried->empty()) return;
    std::vector<LimitState> placeholders;
    for (const Limit& limit : limits) placeholders.push_back(algorithm::initial_state(limit, now));
    (void)add(hash, key, placeholders, false, std::move(carried), limits, now);
  }

  // Counts what `entry` takes now (its states and extras changed in place).
  void recount(Entry* entry) {
    const std::size_t bytes = record_bytes(entry->key_size, entry->states(), entry->extras.get());
    adjust(entry, bytes);
  }

  // Whether `entry` may grow to `bytes` (room taken if so).
  bool room_to_grow(Entry* entry, std::size_t bytes, Micros now) {
    if (bytes <= entry->bytes) return true;
    if (bytes > std::numeric_limits<std::uint32_t>::max()) return false;
    const std::size_t more = bytes - entry->bytes;
    if (!make_room(entry->policy(), 0, more, entry, now)) return false;
    // Taken in the totals already: count it in the record, its share and the shard.
    entry->bytes = static_cast<std::uint32_t>(bytes);
    share_of(entry).bytes += more;
    bytes_ += more;
    return true;
  }

  // The record's expiry: the latest of its limit states (when held), box and reservations.
  static void update_expiry(Entry* entry, std::span<const Limit> limits) {
    Micros latest = entry->limits_held ? latest_expiry(limits, entry->states()) : 0;
    if (const Extras* extras = entry->extras.get(); extras != nullptr) {
      if (extras->penalty) latest = std::max(latest, extras->penalty_expires_at);
      for (const Reservation& r : extras->reservations) latest = std::max(latest, r.expires_at);
    }
    entry->expires_at = latest;
  }

  // Ends an operation on a record that keeps it: its states become `states` when `changed`
  // (room for them taken), empty extras go, and its size, expiry and recency follow.
  void keep(Entry* entry, std::span<LimitState> states, bool changed,
            std::span<const Limit> limits) {
    if (changed) {
      std::move(states.begin(), states.end(), entry->states().begin());
      entry->limits_held = true;
    }
    if (entry->extras != nullptr && entry->extras->empty()) entry->extras.reset();
    recount(entry);
    update_expiry(entry, limits);
    touch(entry);
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
    total_keys_.fetch_sub(1, std::memory_order_relaxed);
    total_bytes_.fetch_sub(entry->bytes, std::memory_order_relaxed);
    bytes_ -= entry->bytes;
    const auto share = shares_.find(entry->policy());
    share->second.bytes -= entry->bytes;
    if (--share->second.records == 0) shares_.erase(share);
    Entry::destroy(entry);
  }

  void touch(Entry* entry) {
    if (entry == newest_) return;
    unlink(entry);
    link_newest(entry);
  }

  std::mutex mutex;
  std::size_t size() const { return size_; }
  std::uint64_t refusals() const { return refusals_; }
  std::uint64_t evictions() const { return evictions_; }
  std::uint64_t expirations() const { return expirations_; }
  // Records with a penalty box, and open reservations: walks the shard (for stats()).
  std::pair<std::size_t, std::size_t> extras_counts() const {
    std::size_t boxes = 0;
    std::size_t reservations = 0;
    for (const Entry* entry = newest_; entry != nullptr; entry = entry->older) {
      if (entry->extras == nullptr) continue;
      if (entry->extras->penalty) ++boxes;
      reservations += entry->extras->reservations.size();
    }
    return {boxes, reservations};
  }

 private:
  void adjust(Entry* entry, std::size_t bytes) {
    if (bytes >= entry->bytes) {
      const std::size_t more = bytes - entry->bytes;
      total_bytes_.fetch_add(more, std::memory_order_relaxed);
      share_of(entry).bytes += more;
      bytes_ += more;
    } else {
      const std::size_t less = entry->bytes - bytes;
      total_bytes_.fetch_sub(less, std::memory_order_relaxed);
      share_of(entry).bytes -= less;
      bytes_ -= less;
    }
    // record_bytes of a record that exists: far below 4 GiB (room_to_grow refuses more).
    entry->bytes = static_cast<std::uint32_t>(bytes);
  }

  PolicyShare& share_of(Entry* entry) { return shares_.find(entry->policy())->second; }

  // Drops every expired record among the `scan` least recently used (but `keep`); whether any
  // was. Idle records gather at the old end, so this keeps memory proportional to live records
  // without a background thread.
  bool drop_expired(Micros now, int scan, const Entry* keep) {
    bool dropped = false;
    Entry* entry = oldest_;
    for (int i = 0; i < scan && entry != nullptr; ++i) {
      Entry* newer = entry->newer;
      if (entry->expires_at <= now && entry != keep) {
        remove(entry);
        ++expirations_;
        dropped = true;
      }
      entry = newer;
    }
    return dropped;
  }

  // The fair-share rule (memory_store.h): a policy below its share of this shard may evict a
  // record of the policy holding the most; one at or above its share may not. Whether a record
  // was evicted.
  bool evict_for(std::string_view policy, const Entry* keep) {
    const auto mine = shares_.find(policy);
    const std::size_t mine_bytes = mine == shares_.end() ? 0 : mine->second.bytes;
    const std::size_t policies = shares_.size() + (mine == shares_.end() ? 1 : 0);
    if (mine_bytes >= bytes_ / policies) return false;
    auto largest = shares_.end();
    for (auto share = shares_.begin(); share != shares_.end(); ++share) {
      if (largest == shares_.end() || share->second.bytes > largest->second.bytes) largest = share;
    }
    if (largest == shares_.end() || largest == mine) return false;
    const std::string_view largest_policy = largest->first;
    // Its record expiring soonest (forgiving the least) among those least recently used.
    Entry* victim = nullptr;
    int seen = 0;
    Entry* entry = oldest_;
    for (int i = 0; i < kEvictScan && seen < kEvictSample && entry != nullptr; ++i) {
      if (entry != keep && entry->policy() == largest_policy) {
        ++seen;
        if (victim == nullptr || entry->expires_at < victim->expires_at) victim = entry;
      }
      entry = entry->newer;
    }
    if (victim == nullptr) return false;
    remove(victim);
    ++evictions_;
    return true;
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

  std::atomic<std::size_t>& total_keys_;
  std::atomic<std::size_t>& total_bytes_;
  std::size_t max_keys_;
  std::size_t max_bytes_;
  std::vector<Entry*> buckets_;
  std::size_t size_ = 0;
  std::size_t bytes_ = 0;  // this shard's records
  Entry* newest_ = nullptr;
  Entry* oldest_ = nullptr;
  std::uint64_t refusals_ = 0;
  std::uint64_t evictions_ = 0;
  std::uint64_t expirations_ = 0;
  // By policy name, found by a record's key prefix without a copy.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, PolicyShare, NameHash, std::equal_to<>> shares_;
};

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

namespace {

// The subject's record with `limits.size()` states: `entry` itself, or null after dropping an
// entry made for another number of limits (the policy changed: its limits start afresh), whose
// extras (penalty box, reservations) are handed to `carried`.
template <typename Shard>
Entry* matching(Shard& shard, Entry* entry, std::span<const Limit> limits,
                std::unique_ptr<Extras>& carried) {
  if (entry == nullptr || entry->state_count == limits.size()) return entry;
  carried = std::move(entry->extras);
  shard.remove(entry);
  return nullptr;
}

// The live penalty box in `extras` under `penalty` at `now` (empty when none or expired).
algorithm::PenaltyState live_penalty(const Extras* extras, const algorithm::Penalty& penalty,
                                     Micros now) {
  if (extras == nullptr || !extras->penalty) return {};
  if (algorithm::penalty_expires_at(penalty, *extras->penalty) <= now) return {};
  return *extras->penalty;
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
  decision = decision_from(algorithm::evaluate(ref.limits, scratch, cost, now, lease));
  algorithm::PenaltyState penalty;
  bool struck = false;
  if (ref.penalty != nullptr) {
    penalty =
        live_penalty(entry != nullptr ? entry->extras.get() : carried.get(), *ref.penalty, now);
    struck = algorithm::penalize(*ref.penalty, penalty, decision.verdict, cost, now);
  }
  const bool charged = decision.verdict.allowed && cost > 0;
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

StatusOr<bool> MemoryStore::release(const SubjectRef& ref, std::string_view lease) {
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  Entry* entry = shard.find_live(hash, key, now);
  if (entry == nullptr || !entry->limits_held || entry->state_count != ref.limits.size()) {
    return false;
  }
  refresh(ref.limits, entry->states(), now, RefreshScope::kConcurrencyLimits);
  const bool released = algorithm::release_lease(ref.limits, entry->states(), lease, now);
  shard.recount(entry);
  Shard::update_expiry(entry, ref.limits);
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
  if (entry == nullptr || !entry->limits_held || entry->state_count != ref.limits.size()) {
    return false;
  }
  refresh(ref.limits, entry->states(), now, RefreshScope::kConcurrencyLimits);
  const bool renewed = algorithm::renew_lease(ref.limits, entry->states(), lease, now);
  shard.recount(entry);
  Shard::update_expiry(entry, ref.limits);
  shard.touch(entry);
  return renewed;
}

StatusOr<Decision> MemoryStore::apply_quota(const SubjectRef& ref, const QuotaRequest& request) {
  if (Status status = validate_quota_request(ref, request); !status.ok()) return status;
  if (Status status = validate_reservation_ttl(request, reservation_limits_); !status.ok()) {
    return status;
  }
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);

  std::lock_guard lock(shard.mutex);
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

std::vector<LimitState> MemoryStore::current_states(const SubjectRef& ref, Micros now) {
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::vector<LimitState> states;
  {
    std::lock_guard lock(shard.mutex);
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
  if (Status status = validate_subject_ref(ref); !status.ok()) return status;
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
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
  if (Status status = validate_penalty_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
  const Entry* entry = shard.find_live(hash, key, now);
  const algorithm::PenaltyState state =
      live_penalty(entry != nullptr ? entry->extras.get() : nullptr, *ref.penalty, now);
  return penalty_status(*ref.penalty, state, now);
}

StatusOr<bool> MemoryStore::lift_penalty(const SubjectRef& ref) {
  if (Status status = validate_penalty_ref(ref); !status.ok()) return status;
  const Micros now = clock_.now();
  const std::string_view key = key_of(ref);
  const std::uint64_t hash = std::hash<std::string_view>{}(key);
  Shard& shard = shard_for(hash);
  std::lock_guard lock(shard.mutex);
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
    std::lock_guard lock(shard->mutex);
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
