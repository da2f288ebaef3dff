#include "sluice/auth/kdf_gate.h"

#include <utility>

namespace sluice::auth {

std::optional<KdfGate::Permit> KdfGate::try_enter() {
  {
    std::lock_guard lock(mutex_);
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
  std::lock_guard lock(mutex_);
  --running_;
}

}  // namespace sluice::auth
