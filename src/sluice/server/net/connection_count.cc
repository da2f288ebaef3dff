#include "sluice/server/net/connection_count.h"

#include "sluice/core/mutex.h"

namespace sluice::server {

void ConnectionCount::opened(const std::string& peer) {
  total_.fetch_add(1);
  MutexLock lock(mutex_);
  ++peers_[peer];
}

void ConnectionCount::closed(const std::string& peer) {
  total_.fetch_sub(1);
  MutexLock lock(mutex_);
  if (auto it = peers_.find(peer); it != peers_.end() && --it->second == 0) peers_.erase(it);
}

std::size_t ConnectionCount::from(const std::string& peer) const {
  MutexLock lock(mutex_);
  const auto it = peers_.find(peer);
  return it == peers_.end() ? 0 : it->second;
}

}  // namespace sluice::server
