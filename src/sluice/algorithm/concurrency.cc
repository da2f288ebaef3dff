#include "sluice/algorithm/concurrency.h"

#include <algorithm>
#include <vector>

namespace sluice::algorithm {
namespace {

bool is_live(const Lease& lease, Micros now) { return lease.expires_at > now; }

std::int64_t held_units(const ConcurrencyState& state, Micros now) {
  std::int64_t held = 0;
  for (const Lease& lease : state.leases) {
    if (is_live(lease, now)) held += lease.cost;
  }
  return held;
}

void drop_expired(ConcurrencyState& state, Micros now) {
  std::erase_if(state.leases, [now](const Lease& lease) { return !is_live(lease, now); });
}

Micros latest_expiry(const ConcurrencyState& state, Micros now) {
  Micros latest = now;
  for (const Lease& lease : state.leases) latest = std::max(latest, lease.expires_at);
  return latest;
}

}  // namespace

ConcurrencyState initial_state(const Concurrency& /*params*/, Micros /*now*/) { return {}; }

Verdict decide(const Concurrency& params, const ConcurrencyState& state, std::int64_t cost,
               Micros now) {
  const std::int64_t held = held_units(state, now);
  Verdict verdict{.limit = params.limit};
  if (held + cost <= params.limit) {
    verdict.allowed = true;
    verdict.remaining = params.limit - held - cost;
    const Micros latest = latest_expiry(state, now);
    verdict.reset_after = (cost > 0 ? std::max(latest, now + params.lease_ttl) : latest) - now;
    return verdict;
  }
  verdict.remaining = params.limit - held;
  verdict.reset_after = latest_expiry(state, now) - now;
  if (cost > params.limit) return verdict;  // never
  // Leases expire in expiry order; wait until enough units are free.
  std::vector<const Lease*> live;
  for (const Lease& lease : state.leases) {
    if (is_live(lease, now)) live.push_back(&lease);
  }
  std::sort(live.begin(), live.end(),
            [](const Lease* a, const Lease* b) { return a->expires_at < b->expires_at; });
  std::int64_t excess = held + cost - params.limit;
  for (const Lease* lease : live) {
    excess -= lease->cost;
    if (excess <= 0) {
      verdict.retry_after = lease->expires_at - now;
      break;
    }
  }
  return verdict;
}

void commit(const Concurrency& params, ConcurrencyState& state, std::int64_t cost, Micros now,
            std::string_view lease_id) {
  drop_expired(state, now);
  state.leases.push_back(
      {.id = std::string(lease_id), .expires_at = now + params.lease_ttl, .cost = cost});
}

Micros expires_at(const Concurrency& /*params*/, const ConcurrencyState& state) {
  Micros latest = 0;
  for (const Lease& lease : state.leases) latest = std::max(latest, lease.expires_at);
  return latest;
}

bool release(ConcurrencyState& state, std::string_view lease_id, Micros now) {
  const auto it = std::find_if(state.leases.begin(), state.leases.end(),
                               [&](const Lease& lease) { return lease.id == lease_id; });
  if (it == state.leases.end()) return false;
  const bool was_live = is_live(*it, now);
  state.leases.erase(it);
  return was_live;
}

bool renew(const Concurrency& params, ConcurrencyState& state, std::string_view lease_id,
           Micros now) {
  for (Lease& lease : state.leases) {
    if (lease.id == lease_id && is_live(lease, now)) {
      lease.expires_at = std::max(lease.expires_at, now + params.lease_ttl);
      return true;
    }
  }
  return false;
}

}  // namespace sluice::algorithm
