// MemoryStore::Shard: one shard of the memory store (memory_store.h) — a hash table of records
// (memory_record.h) with chained buckets and an intrusive least-recently-used list, and the
// rules that keep the store within its bounds: expired records dropped from the old end, the
// fair-share eviction, refusals. Internal to store/memory/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/store/memory/memory_record.h"
#include "sluice/store/memory/memory_store.h"

namespace sluice::store {

// A hash table with chained buckets and an intrusive LRU list. Callers hold `mutex`.
class MemoryStore::Shard {
 public:
  using Entry = memory::Entry;
  using Extras = memory::Extras;
  using Limit = algorithm::Limit;
  using LimitState = algorithm::LimitState;

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
  Entry* find_live(std::uint64_t hash, std::string_view key, Micros now) SLUICE_REQUIRES(mutex) {
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
                 Micros now) SLUICE_REQUIRES(mutex) {
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
             std::unique_ptr<Extras> extras, std::span<const Limit> limits, Micros now)
      SLUICE_REQUIRES(mutex) {
    const std::size_t bytes = memory::record_bytes(key.size(), states, extras.get());
    const std::string_view policy = key.substr(0, key.find(':'));
    if (!make_room(policy, 1, bytes, nullptr, now)) return nullptr;
    Entry* created = Entry::create(hash, key, states);
    created->limits_held = held;
    created->extras = std::move(extras);
    created->bytes = static_cast<std::uint32_t>(bytes);
    auto share = shares_.find(policy);
    if (share == shares_.end())
      share = shares_.emplace(std::string(policy), memory::PolicyShare{}).first;
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
                    std::unique_ptr<Extras> carried, Micros now) SLUICE_REQUIRES(mutex) {
    if (carried == nullptr || carried->empty()) return;
    std::vector<LimitState> placeholders;
    for (const Limit& limit : limits) placeholders.push_back(algorithm::initial_state(limit, now));
    (void)add(hash, key, placeholders, false, std::move(carried), limits, now);
  }

  // Counts what `entry` takes now (its states and extras changed in place).
  void recount(Entry* entry) SLUICE_REQUIRES(mutex) {
    const std::size_t bytes =
        memory::record_bytes(entry->key_size, entry->states(), entry->extras.get());
    adjust(entry, bytes);
  }

  // Whether `entry` may grow to `bytes` (room taken if so).
  bool room_to_grow(Entry* entry, std::size_t bytes, Micros now) SLUICE_REQUIRES(mutex) {
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
    Micros latest = entry->limits_held ? memory::latest_expiry(limits, entry->states()) : 0;
    if (const Extras* extras = entry->extras.get(); extras != nullptr) {
      if (extras->penalty) latest = std::max(latest, extras->penalty_expires_at);
      for (const memory::Reservation& r : extras->reservations)
        latest = std::max(latest, r.expires_at);
    }
    entry->expires_at = latest;
  }

  // Ends an operation on a record that keeps it: its states become `states` when `changed`
  // (room for them taken), empty extras go, and its size, expiry and recency follow.
  void keep(Entry* entry, std::span<LimitState> states, bool changed, std::span<const Limit> limits)
      SLUICE_REQUIRES(mutex) {
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
  void insert(Entry* entry) SLUICE_REQUIRES(mutex) {
    if (size_ + 1 > buckets_.size()) grow();
    Entry*& head = bucket(entry->hash);
    entry->chain_next = head;
    head = entry;
    link_newest(entry);
    ++size_;
  }

  void remove(Entry* entry) SLUICE_REQUIRES(mutex) {
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

  void touch(Entry* entry) SLUICE_REQUIRES(mutex) {
    if (entry == newest_) return;
    unlink(entry);
    link_newest(entry);
  }

  Mutex mutex;
  std::size_t size() const SLUICE_REQUIRES(mutex) { return size_; }
  std::uint64_t refusals() const SLUICE_REQUIRES(mutex) { return refusals_; }
  std::uint64_t evictions() const SLUICE_REQUIRES(mutex) { return evictions_; }
  std::uint64_t expirations() const SLUICE_REQUIRES(mutex) { return expirations_; }
  // Records with a penalty box, and open reservations: walks the shard (for stats()).
  std::pair<std::size_t, std::size_t> extras_counts() const SLUICE_REQUIRES(mutex) {
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
  void adjust(Entry* entry, std::size_t bytes) SLUICE_REQUIRES(mutex) {
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

  memory::PolicyShare& share_of(Entry* entry) SLUICE_REQUIRES(mutex) {
    return shares_.find(entry->policy())->second;
  }

  // Drops every expired record among the `scan` least recently used (but `keep`); whether any
  // was. Idle records gather at the old end, so this keeps memory proportional to live records
  // without a background thread.
  bool drop_expired(Micros now, int scan, const Entry* keep) SLUICE_REQUIRES(mutex) {
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
  bool evict_for(std::string_view policy, const Entry* keep) SLUICE_REQUIRES(mutex) {
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

  Entry*& bucket(std::uint64_t hash) SLUICE_REQUIRES(mutex) {
    return buckets_[hash & (buckets_.size() - 1)];
  }

  void grow() SLUICE_REQUIRES(mutex) {
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

  void link_newest(Entry* entry) SLUICE_REQUIRES(mutex) {
    entry->newer = nullptr;
    entry->older = newest_;
    if (newest_ != nullptr) newest_->newer = entry;
    newest_ = entry;
    if (oldest_ == nullptr) oldest_ = entry;
  }

  void unlink(Entry* entry) SLUICE_REQUIRES(mutex) {
    (entry->newer != nullptr ? entry->newer->older : newest_) = entry->older;
    (entry->older != nullptr ? entry->older->newer : oldest_) = entry->newer;
  }

  std::atomic<std::size_t>& total_keys_;
  std::atomic<std::size_t>& total_bytes_;
  std::size_t max_keys_;
  std::size_t max_bytes_;
  std::vector<Entry*> buckets_ SLUICE_GUARDED_BY(mutex);
  std::size_t size_ SLUICE_GUARDED_BY(mutex) = 0;
  std::size_t bytes_ SLUICE_GUARDED_BY(mutex) = 0;  // this shard's records
  Entry* newest_ SLUICE_GUARDED_BY(mutex) = nullptr;
  Entry* oldest_ SLUICE_GUARDED_BY(mutex) = nullptr;
  std::uint64_t refusals_ SLUICE_GUARDED_BY(mutex) = 0;
  std::uint64_t evictions_ SLUICE_GUARDED_BY(mutex) = 0;
  std::uint64_t expirations_ SLUICE_GUARDED_BY(mutex) = 0;
  // By policy name, found by a record's key prefix without a copy.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, memory::PolicyShare, NameHash, std::equal_to<>> shares_
      SLUICE_GUARDED_BY(mutex);
};

}  // namespace sluice::store
