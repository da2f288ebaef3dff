#include "sluice/auth/kdf_gate.h"

#include <utility>

#include "sluice/core/mutex.h"

namespace sluice::auth {

std::optional<KdfGate::Permit> KdfGate::try_enter() {
  {
    MutexLock lock(mutex_);
    if (running_ < concurrency_) {
      ++running_;
      entered_.fetch_add(1, std::memory_order_relaxed);
      return Permit(this);
    }
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  return std::nullopt;
}

void KdfGate::leave() {
  MutexLock lock(mutex_);
  --running_;
}

}  // namespace sluice::auth
