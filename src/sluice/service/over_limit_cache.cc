#include "sluice/service/over_limit_cache.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "sluice/algorithm/catalogue.h"
#include "sluice/core/mutex.h"
#include "sluice/service/subject_key.h"

namespace sluice::service {
namespace {

// FNV-1a over 64-bit words: stable, cheap, and enough to tell limits apart.
class Fnv {
 public:
  void add(std::uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (word >> (8 * i)) & 0xFF;
      hash_ *= 0x100000001b3ULL;
    }
  }
  void add(std::string_view text) {
    for (char c : text) {
      hash_ ^= static_cast<unsigned char>(c);
      hash_ *= 0x100000001b3ULL;
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::uint64_t limits_fingerprint(std::span<const algorithm::Limit> limits) {
  Fnv fnv;
  const auto add = [&fnv](auto value) { fnv.add(static_cast<std::uint64_t>(value)); };
  for (const algorithm::Limit& limit : limits) {
    add(limit.index());
    for (const std::optional<std::int64_t>& value : algorithm::parameter_values(limit)) {
      add(value.has_value()), add(value.value_or(0));
    }
  }
  return fnv.value();
}

OverLimitCache::OverLimitCache(std::size_t capacity, DefenceMetrics& metrics)
    : capacity_(capacity),
      shard_capacity_(capacity == 0 ? 0 : std::max<std::size_t>(1, capacity / kShards)),
      metrics_(metrics) {}

OverLimitCache::Shard& OverLimitCache::shard(std::string_view key) {
  return shards_[std::hash<std::string_view>{}(key) % kShards];
}

void OverLimitCache::erase(Shard& shard, std::unordered_map<std::string, Entry>::iterator it) {
  shard.by_expiry.erase(it->second.by_expiry);
  shard.entries.erase(it);
  metrics_.add_cache_entries(-1);
}

std::optional<Decision> OverLimitCache::find(const policy::Policy& policy, std::string_view subject,
                                             std::int64_t cost, Micros now) {
  if (capacity_ == 0) return std::nullopt;
  const std::string key = policy_subject_key(policy.name, subject);
  Shard& s = shard(key);
  std::optional<Decision> hit;
  {
    MutexLock lock(s.mutex);
    auto it = s.entries.find(key);
    if (it == s.entries.end()) return std::nullopt;
    const Entry& entry = it->second;
    if (now >= entry.expires) {
      erase(s, it);
      return std::nullopt;
    }
    if (cost < entry.cost || entry.limits != limits_fingerprint(policy.limits)) {
      return std::nullopt;
    }
    hit.emplace(Decision{.verdict = entry.verdict, .limit_index = entry.limit_index});
    hit->verdict.retry_after = entry.expires - now;
    hit->verdict.reset_after = std::max(entry.resets - now, entry.expires - now);
  }
  metrics_.record_cache_hit(policy.name);
  return hit;
}

void OverLimitCache::remember(const policy::Policy& policy, std::string_view subject,
                              std::int64_t cost, const Decision& stored, Micros asked_at,
                              Micros now) {
  if (capacity_ == 0 || stored.verdict.allowed || !stored.verdict.retry_after) return;
  const Micros expires = asked_at + *stored.verdict.retry_after;
  if (expires <= now) return;  // already past: nothing to save
  std::string key = policy_subject_key(policy.name, subject);
  Shard& s = shard(key);
  MutexLock lock(s.mutex);
  if (auto it = s.entries.find(key); it != s.entries.end()) erase(s, it);
  // Expired entries go first; then, while full, the one that expires soonest.
  while (!s.by_expiry.empty() &&
         (s.by_expiry.begin()->first <= now || s.entries.size() >= shard_capacity_)) {
    const bool live = s.by_expiry.begin()->first > now;
    erase(s, s.entries.find(*s.by_expiry.begin()->second));
    if (live) metrics_.record_cache_eviction();
  }
  auto [it, inserted] = s.entries.try_emplace(std::move(key));
  Entry& entry = it->second;
  entry.expires = expires;
  entry.resets = asked_at + stored.verdict.reset_after;
  entry.cost = cost;
  entry.limits = limits_fingerprint(policy.limits);
  entry.verdict = stored.verdict;
  entry.limit_index = stored.limit_index;
  entry.by_expiry = s.by_expiry.emplace(expires, &it->first);
  metrics_.add_cache_entries(1);
}

void OverLimitCache::forget(std::string_view policy, std::string_view subject) {
  if (capacity_ == 0) return;
  const std::string key = policy_subject_key(policy, subject);
  Shard& s = shard(key);
  MutexLock lock(s.mutex);
  if (auto it = s.entries.find(key); it != s.entries.end()) erase(s, it);
}

std::size_t OverLimitCache::size() const {
  std::size_t total = 0;
  for (const Shard& s : shards_) {
    MutexLock lock(s.mutex);
    total += s.entries.size();
  }
  return total;
}

}  // namespace sluice::service
