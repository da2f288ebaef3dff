#include "sluice/store/memory/memory_record.h"

#include <algorithm>

namespace sluice::store::memory {
namespace {

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

}  // namespace

std::size_t record_bytes(std::size_t key_size, std::span<const LimitState> states,
                         const Extras* extras) {
  std::size_t bytes = allocation(Entry::block_size(states.size(), key_size)) + kBucketBytes;
  for (const LimitState& state : states) bytes += state_heap(state);
  return bytes + extras_bytes(extras);
}

bool is_stale(const Limit& limit, const LimitState& state, Micros now) {
  return !algorithm::state_fits(limit, state) || algorithm::expires_at(limit, state) <= now;
}

void refresh(std::span<const Limit> limits, std::span<LimitState> states, Micros now,
             RefreshScope scope) {
  for (std::size_t i = 0; i < limits.size(); ++i) {
    if (scope == RefreshScope::kConcurrencyLimits && !algorithm::algorithm_of(limits[i]).leases) {
      continue;
    }
    if (is_stale(limits[i], states[i], now)) states[i] = algorithm::initial_state(limits[i], now);
  }
}

Micros latest_expiry(std::span<const Limit> limits, std::span<LimitState> states) {
  Micros latest = 0;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    latest = std::max(latest, algorithm::expires_at(limits[i], states[i]));
  }
  return latest;
}

std::string_view key_of(const SubjectRef& ref) {
  thread_local std::string buffer;
  buffer.assign(ref.policy).push_back(':');
  buffer.append(ref.subject);
  return buffer;
}

algorithm::PenaltyState live_penalty(const Extras* extras, const algorithm::Penalty& penalty,
                                     Micros now) {
  if (extras == nullptr || !extras->penalty) return {};
  if (algorithm::penalty_expires_at(penalty, *extras->penalty) <= now) return {};
  return *extras->penalty;
}

}  // namespace sluice::store::memory
