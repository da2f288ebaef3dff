// KdfGate: how many password hashes (argon2id, 64 MiB and tens of milliseconds each) may run at
// once on the threads that also serve other admin calls. A caller that finds every slot taken
// is told to come back later instead of waiting: waiting would hold one of those threads, and a
// flood of hashes would then starve the calls that need none (issue 32, M7). Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "sluice/core/mutex.h"

namespace sluice::auth {

class KdfGate {
 public:
  // `concurrency` ≥ 1 hashes at once.
  explicit KdfGate(std::size_t concurrency) : concurrency_(concurrency) {}
  KdfGate(const KdfGate&) = delete;
  KdfGate& operator=(const KdfGate&) = delete;

  // Held while one hash (or verification) runs; frees its slot when destroyed.
  class Permit {
   public:
    Permit(Permit&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Permit& operator=(Permit&&) = delete;
    ~Permit() {
      if (gate_ != nullptr) gate_->leave();
    }

   private:
    friend class KdfGate;
    explicit Permit(KdfGate* gate) : gate_(gate) {}
    KdfGate* gate_;
  };

  // A slot, or nullopt (counted as refused) when all `concurrency` are taken. Never blocks.
  std::optional<Permit> try_enter();

  std::size_t concurrency() const { return concurrency_; }
  // Permits handed out / refused since construction (GET /metrics-style counters, tests).
  std::uint64_t entered() const { return entered_.load(std::memory_order_relaxed); }
  std::uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void leave();

  const std::size_t concurrency_;
  Mutex mutex_;
  std::size_t running_ SLUICE_GUARDED_BY(mutex_) = 0;
  std::atomic<std::uint64_t> entered_{0};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace sluice::auth
