#include "sluice/service/pending_bound.h"

#include <algorithm>
#include <functional>

#include "sluice/core/mutex.h"

namespace sluice::service {
namespace {

// Adds `count` to `counts[key]` unless that passes `bound` (0: no bound); false when it would.
bool add_within(std::unordered_map<std::string, std::size_t>& counts, std::string_view key,
                std::size_t count, std::size_t bound) {
  auto it = counts.find(std::string(key));
  const std::size_t held = it == counts.end() ? 0 : it->second;
  if (bound != 0 && (count > bound || held > bound - count)) return false;
  if (it == counts.end()) {
    counts.emplace(std::string(key), count);
  } else {
    it->second += count;
  }
  return true;
}

// Takes `count` back from `counts[key]`, dropping the entry at zero so the map holds only keys
// with decisions in flight (its size is bounded by the total).
void subtract(std::unordered_map<std::string, std::size_t>& counts, std::string_view key,
              std::size_t count) {
  auto it = counts.find(std::string(key));
  if (it == counts.end()) return;
  it->second = it->second > count ? it->second - count : 0;
  if (it->second == 0) counts.erase(it);
}

}  // namespace

PendingBounds with_default_shares(PendingBounds bounds) {
  if (bounds.total == 0) return bounds;
  const auto half = [](std::size_t of) { return of > 1 ? of / 2 : of; };
  if (bounds.per_client == 0) bounds.per_client = half(bounds.total);
  if (bounds.waiting == 0) bounds.waiting = half(bounds.total);
  if (bounds.waiting_per_client == 0) bounds.waiting_per_client = half(bounds.waiting);
  if (bounds.waiting_per_policy == 0) bounds.waiting_per_policy = half(bounds.waiting);
  return bounds;
}

Status pending_refused(PendingRefusal refusal, const PendingBounds& bounds) {
  std::string what;
  switch (refusal) {
    case PendingRefusal::kTotal:
      what = std::to_string(bounds.total) + " decisions are in flight (max_pending)";
      break;
    case PendingRefusal::kClient:
      what = "this client has " + std::to_string(bounds.per_client) +
             " decisions in flight (max_pending_per_client)";
      break;
    case PendingRefusal::kWaiting:
      what = std::to_string(bounds.waiting) + " decisions are waiting (max_waiting_decisions)";
      break;
    case PendingRefusal::kWaitingClient:
      what = "this client has " + std::to_string(bounds.waiting_per_client) +
             " decisions waiting (max_waiting_per_client)";
      break;
    case PendingRefusal::kWaitingPolicy:
      what = "this policy has " + std::to_string(bounds.waiting_per_policy) +
             " decisions waiting (max_waiting_per_policy)";
      break;
  }
  return Status(StatusCode::kUnavailable, "overloaded: " + what + "; retry shortly",
                StatusDetail::kOverloaded);
}

PendingBound::PendingBound(PendingBounds bounds, std::atomic<std::size_t>& pending)
    : bounds_(bounds), pending_(pending) {}

PendingBound::Shard& PendingBound::shard(std::string_view client) const {
  return shards_[std::hash<std::string_view>{}(client) % kShards];
}

bool PendingBound::take_total(std::size_t count) {
  std::size_t now = pending_.load(std::memory_order_relaxed);
  do {
    if (bounds_.total != 0 && (count > bounds_.total || now > bounds_.total - count)) {
      return false;
    }
  } while (!pending_.compare_exchange_weak(now, now + count, std::memory_order_relaxed));
  return true;
}

void PendingBound::give_back_total(std::size_t count) {
  pending_.fetch_sub(count, std::memory_order_relaxed);
}

bool PendingBound::take_client(std::string_view client, std::size_t count) {
  if (bounds_.per_client == 0 || client.empty()) return true;
  Shard& s = shard(client);
  MutexLock lock(s.mutex);
  return add_within(s.counts, client, count, bounds_.per_client);
}

void PendingBound::give_back_client(std::string_view client, std::size_t count) {
  if (bounds_.per_client == 0 || client.empty()) return;
  Shard& s = shard(client);
  MutexLock lock(s.mutex);
  subtract(s.counts, client, count);
}

std::optional<PendingRefusal> PendingBound::take_waiting(const Claim& claim) {
  if (!claim.waiting) return std::nullopt;
  MutexLock lock(waiting_mutex_);
  if (bounds_.waiting != 0 &&
      (claim.count > bounds_.waiting || waiting_ > bounds_.waiting - claim.count)) {
    return PendingRefusal::kWaiting;
  }
  const bool by_client = bounds_.waiting_per_client != 0 && !claim.client.empty();
  if (by_client &&
      !add_within(waiting_clients_, claim.client, claim.count, bounds_.waiting_per_client)) {
    return PendingRefusal::kWaitingClient;
  }
  if (bounds_.waiting_per_policy != 0 &&
      !add_within(waiting_policies_, claim.policy, claim.count, bounds_.waiting_per_policy)) {
    if (by_client) subtract(waiting_clients_, claim.client, claim.count);
    return PendingRefusal::kWaitingPolicy;
  }
  waiting_ += claim.count;
  return std::nullopt;
}

void PendingBound::give_back_waiting(const Claim& claim) {
  if (!claim.waiting) return;
  MutexLock lock(waiting_mutex_);
  waiting_ -= std::min(waiting_, claim.count);
  if (bounds_.waiting_per_client != 0 && !claim.client.empty()) {
    subtract(waiting_clients_, claim.client, claim.count);
  }
  if (bounds_.waiting_per_policy != 0) subtract(waiting_policies_, claim.policy, claim.count);
}

std::optional<PendingRefusal> PendingBound::take(const Claim& claim) {
  if (!take_total(claim.count)) return PendingRefusal::kTotal;
  if (!take_client(claim.client, claim.count)) {
    give_back_total(claim.count);
    return PendingRefusal::kClient;
  }
  if (std::optional<PendingRefusal> refused = take_waiting(claim)) {
    give_back_client(claim.client, claim.count);
    give_back_total(claim.count);
    return refused;
  }
  return std::nullopt;
}

void PendingBound::give_back(const Claim& claim) {
  give_back_waiting(claim);
  give_back_client(claim.client, claim.count);
  give_back_total(claim.count);
}

std::size_t PendingBound::held_by(std::string_view client) const {
  const Shard& s = shard(client);
  MutexLock lock(s.mutex);
  const auto it = s.counts.find(std::string(client));
  return it == s.counts.end() ? 0 : it->second;
}

std::size_t PendingBound::waiting() const {
  MutexLock lock(waiting_mutex_);
  return waiting_;
}

}  // namespace sluice::service
