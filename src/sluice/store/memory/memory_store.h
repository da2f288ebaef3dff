// MemoryStore: the in-process Store. A sharded hash map from (policy, subject) to one record: the
// states of the policy's limits, and beside them the subject's penalty box and open reservations;
// each shard has one mutex under which the pure algorithm functions run. A record expires when
// all of it is back to unused (lazily, on access, and by a small sweep of the least-recently-used
// end on every insert).
//
// The store is bounded in records (max_keys) and in bytes (max_bytes: key bytes, the record, the
// heap its states, box and reservations use, allocator and hash-table overhead; docs/server.md).
// Every record counts: limit states, penalty boxes, reservations. Policies share the bound
// fairly (issue 32 M5): when the store is full, a new record of a policy holding less than its
// fair share of its shard (the shard's bytes over the policies holding records there) takes room
// from the policy holding the most, whose subject expiring soonest among its least recently used
// is evicted; a new record of a policy at or above its share is refused (ResourceExhausted: the
// Limiter answers it by the policy's failure mode). So one policy's junk never decides another's
// limits, and a flood of new subjects never evicts its own policy's live state (which would
// reset a limit on purpose). Thread-safe.
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
  // Upper bound on records held (a subject's limit states with its penalty box and reservations
  // are one record). At the bound, expired state is dropped first (the shard's least recently
  // used records are checked); then the fair-share rule above decides.
  std::size_t max_keys = 1'000'000;
  // Upper bound on the bytes records take, counted honestly (memory_store.cc record_bytes: the
  // record as malloc sizes it, hash-table slots, the heap its states, box and reservations own;
  // a 900-byte key costs its 900 bytes). Enforced as max_keys is.
  std::size_t max_bytes = std::size_t{256} << 20;
  // Rounded up to a power of two. More shards, less lock contention.
  std::size_t shards = 64;
  // Bounds on reservations (store.h): most TTL, most open per subject.
  ReservationLimits reservations;
};

struct MemoryStoreStats {
  std::size_t keys = 0;         // records: subjects with limit state, a penalty box or reservations
  std::size_t bytes = 0;        // what they take, as max_bytes counts it
  std::uint64_t refusals = 0;   // new records refused: their policy held its share of a full store
  std::uint64_t evictions = 0;  // live records evicted to give a policy under its share room
  std::uint64_t expirations = 0;  // dropped because their state was back to unused
  std::size_t penalty_boxes = 0;  // records holding a penalty box (live or not yet swept)
  std::size_t reservations = 0;   // open reservations held (some may have expired unswept)
};

class MemoryStore final : public Store {
 public:
  // `clock` must outlive the store; it is read once per call.
  explicit MemoryStore(const Clock& clock, MemoryStoreOptions options = {});
  ~MemoryStore() override;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  // The decision port: answered inline (before the call returns), by the calls below.
  void acquire(const SubjectRef& ref, std::int64_t cost, Done done) override {
    done(acquire(ref, cost));
  }
  void lease(const SubjectRef& ref, LeaseOperation operation, std::string_view lease,
             LeaseDone done) override {
    done(change_lease(ref, operation, lease));
  }
  void apply_quota(const SubjectRef& ref, const QuotaRequest& request, Done done) override {
    done(apply_quota(ref, request));
  }

  // The same operations answered as values: the memory store decides on the calling thread.
  StatusOr<Decision> acquire(const SubjectRef& ref, std::int64_t cost);
  StatusOr<bool> release(const SubjectRef& ref, std::string_view lease) {
    return change_lease(ref, LeaseOperation::kRelease, lease);
  }
  StatusOr<bool> renew(const SubjectRef& ref, std::string_view lease) {
    return change_lease(ref, LeaseOperation::kRenew, lease);
  }
  StatusOr<Decision> apply_quota(const SubjectRef& ref, const QuotaRequest& request);

  // The admin inspector.
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
  // Where a subject's record lives: its key, the key's hash and the shard that holds it.
  struct Location {
    std::string_view key;
    std::uint64_t hash;
    Shard& shard;
  };
  Location locate(const SubjectRef& ref);
  // Releases or renews `lease` (release and renew above).
  StatusOr<bool> change_lease(const SubjectRef& ref, LeaseOperation operation,
                              std::string_view lease);
  // A copy of the subject's states as a decision at `now` would start from (stale or absent
  // ones made initial). Stores nothing.
  std::vector<algorithm::LimitState> current_states(const SubjectRef& ref, Micros now);

  const Clock& clock_;
  ReservationLimits reservation_limits_;
  std::atomic<std::size_t> total_keys_{0};
  std::atomic<std::size_t> total_bytes_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  int shard_shift_;
};

}  // namespace sluice::store
