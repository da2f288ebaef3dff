// MemoryStore: the in-process Store. A sharded hash map from (policy, subject) to the states of
// the policy's limits; each shard has one mutex under which the pure algorithm functions run.
// Entries expire when every limit's state is back to unused (lazily, on access, and by a small
// sweep of the least-recently-used end on every insert), and the least recently used entry is
// evicted when the configured key count is exceeded. Thread-safe.
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
  // Upper bound on subjects held; past it an insert evicts the least recently used subject of
  // its shard (an approximation of global LRU that needs no global lock).
  std::size_t max_keys = 1'000'000;
  // Rounded up to a power of two. More shards, less lock contention.
  std::size_t shards = 64;
};

struct MemoryStoreStats {
  std::size_t keys = 0;
  std::uint64_t evictions = 0;    // dropped for room while their state was still in use
  std::uint64_t expirations = 0;  // dropped because their state was back to unused
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
  StatusOr<std::vector<algorithm::Verdict>> inspect(const SubjectRef& ref) override;
  Status reset(const SubjectRef& ref) override;

  MemoryStoreStats stats() const;

 private:
  class Shard;
  Shard& shard_for(std::uint64_t hash);

  const Clock& clock_;
  std::atomic<std::size_t> total_keys_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  int shard_shift_;
};

}  // namespace sluice::store
