#include "sluice/service/last_seen_usage.h"

#include <cmath>
#include <functional>

#include "sluice/core/mutex.h"
#include "sluice/service/subject_key.h"

namespace sluice::service {
namespace {

constexpr std::size_t kShards = 16;

}  // namespace

LastSeenUsage::LastSeenUsage(std::size_t max_subjects)
    : max_per_shard_(max_subjects / kShards + 1), shards_(std::make_unique<Shard[]>(kShards)) {}

LastSeenUsage::~LastSeenUsage() = default;

LastSeenUsage::Shard& LastSeenUsage::shard_for(const std::string& key) {
  return shards_[std::hash<std::string>{}(key) % kShards];
}

void LastSeenUsage::record(std::string_view policy, std::string_view subject,
                           const Decision& decision, Micros now) {
  const std::int64_t used = decision.verdict.limit - decision.verdict.remaining;
  std::string key = policy_subject_key(policy, subject);
  Shard& shard = shard_for(key);
  MutexLock lock(shard.mu);
  if (used <= 0 || decision.verdict.reset_after <= 0) {
    shard.seen.erase(key);
    return;
  }
  if (shard.seen.size() >= max_per_shard_ && !shard.seen.contains(key)) shard.seen.clear();
  shard.seen[std::move(key)] = {.limit_index = decision.limit_index,
                                .used = used,
                                .until = now + decision.verdict.reset_after};
}

std::optional<SeenUsage> LastSeenUsage::take(std::string_view policy, std::string_view subject,
                                             Micros now) {
  const std::string key = policy_subject_key(policy, subject);
  Shard& shard = shard_for(key);
  MutexLock lock(shard.mu);
  auto found = shard.seen.find(key);
  if (found == shard.seen.end()) return std::nullopt;
  const SeenUsage seen = found->second;
  shard.seen.erase(found);
  if (now >= seen.until) return std::nullopt;  // a window or a refill since: nothing left
  return seen;
}

std::int64_t seed_share(std::int64_t used, double fraction) {
  if (used <= 0) return 0;
  if (fraction >= 1.0) return used;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(used) * fraction));
}

}  // namespace sluice::service
