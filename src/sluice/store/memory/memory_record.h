// The memory store's record (memory_store.h): one subject's limit states, penalty box and open
// reservations in one allocation, and what it costs against the store's byte bound. Internal to
// store/memory/: shared by the decisions (memory_store.cc), the admin reads (memory_admin.cc) and
// the shard that holds records (memory_shard.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/algorithm/catalogue.h"
#include "sluice/store/store.h"
#include "sluice/time.h"

namespace sluice::store::memory {

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

// What a record takes against MemoryStoreOptions::max_bytes: the record as malloc sizes it, its
// hash-table slot, the heap its states and extras own.
std::size_t record_bytes(std::size_t key_size, std::span<const LimitState> states,
                         const Extras* extras);

// Whether limit i's stored state no longer applies: it is of another algorithm (the policy
// changed) or past its expiry (what a Redis key's TTL would have dropped).
bool is_stale(const Limit& limit, const LimitState& state, Micros now);

enum class RefreshScope : std::uint8_t { kAllLimits, kConcurrencyLimits };

// Replaces stale states with the limit's initial state at `now`.
void refresh(std::span<const Limit> limits, std::span<LimitState> states, Micros now,
             RefreshScope scope = RefreshScope::kAllLimits);

// The latest expiry among the limits' states: when the record's limits are back to unused.
Micros latest_expiry(std::span<const Limit> limits, std::span<LimitState> states);

// The map key for (policy, subject), built in a per-thread buffer to avoid an allocation: valid
// until the thread's next call.
std::string_view key_of(const SubjectRef& ref);

// The live penalty box in `extras` under `penalty` at `now` (empty when none or expired).
algorithm::PenaltyState live_penalty(const Extras* extras, const algorithm::Penalty& penalty,
                                     Micros now);

}  // namespace sluice::store::memory
