// MemoryStore: the in-process Store. A sharded hash map from (policy, subject) to the states of
// the policy's limits; each shard has one mutex under which the pure algorithm functions run.
// Entries expire when every limit's state is back to unused (lazily, on access, and by a small
// sweep of the least-recently-used end on every insert). When the store holds max_keys subjects,
// a new subject is refused (ResourceExhausted: the Limiter answers it by the policy's failure
// mode) rather than evicting live state, which would reset someone's limit. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sluice/core/clock.h"
#include "sluice/store/store.h"

namespace sluice::store {

struct MemoryStoreOptions {
  // Upper bound on subjects held (about 100 bytes each beyond the key for one limit: see
  // docs/server.md). At the bound, expired state is dropped first (the shard's least recently
  // used subjects are checked); if none has expired, the new subject is refused.
  std::size_t max_keys = 1'000'000;
  // Rounded up to a power of two. More shards, less lock contention.
  std::size_t shards = 64;
};

struct MemoryStoreStats {
  std::size_t keys = 0;
  std::uint64_t refusals = 0;     // new subjects refused: the store was full of live state
  std::uint64_t expirations = 0;  // dropped because their state was back to unused
  std::size_t penalty_boxes = 0;  // subjects with penalty state held (live or not yet swept)
};

class MemoryStore final : public Store {
 public:
  // `clock` must outlive the store; it is read once per call.
  explicit MemoryStore(const Clock& clock, MemoryStoreOptions options = {});
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  StatusOr<Decision> acquire(const SubjectRef& ref, std::int64_t cost) override;
  StatusOr<bool> release(const SubjectRef& ref, std::string_view lease) override;
  StatusOr<bool> renew(const SubjectRef& ref, std::string_view lease) override;
  StatusOr<Decision> apply_quota(const SubjectRef& ref, const QuotaRequest& request) override;
  StatusOr<std::vector<algorithm::Verdict>> inspect(const SubjectRef& ref) override;
  Status reset(const SubjectRef& ref) override;
  StatusOr<DryRun> dry_run(const SubjectRef& ref, std::int64_t cost) override;
  StatusOr<std::vector<LimitLeases>> leases(const SubjectRef& ref, std::size_t max) override;
  StatusOr<PenaltyStatus> penalty(const SubjectRef& ref) override;
  StatusOr<bool> lift_penalty(const SubjectRef& ref) override;

  MemoryStoreStats stats() const;

 private:
  class Shard;
  Shard& shard_for(std::uint64_t hash);
  // A copy of the subject's states as a decision at `now` would start from (stale or absent
  // ones made initial). Stores nothing.
  std::vector<algorithm::LimitState> current_states(const SubjectRef& ref, Micros now);

  const Clock& clock_;
  std::atomic<std::size_t> total_keys_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  int shard_shift_;
};

}  // namespace sluice::store
