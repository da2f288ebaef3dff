// PolicyCache: the policies a running service decides with, held in memory as an immutable
// snapshot so a decision looks a policy up by (app, name) without a database query. A refresh
// polls the repository's revision (one cheap read) and reloads every policy only when it moved;
// readers keep whichever snapshot they loaded, so a refresh never blocks or tears a lookup.
// Servers pick up changes without restart (DESIGN.md §4) within one poll interval.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "sluice/core/mutex.h"
#include "sluice/policy/policy.h"
#include "sluice/policy/repository.h"
#include "sluice/status.h"

namespace sluice::policy {

struct PolicyCacheOptions {
  // How often the background thread polls the revision. Zero: no thread; call refresh_now().
  std::chrono::milliseconds poll_interval{1'000};
};

class PolicyCache {
 public:
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const {
      return std::hash<std::string_view>{}(text);
    }
  };

  // One consistent view of every policy. Immutable once published.
  struct Snapshot {
    // The repository's revision read before the policies were loaded: the snapshot holds every
    // change up to it (and possibly later ones).
    std::int64_t revision = 0;
    std::unordered_map<std::string, std::shared_ptr<const Policy>, StringHash, std::equal_to<>>
        policies;  // by name, disabled ones included

    // The policy `name` if it exists and lists `app` (or "*"); null otherwise, exactly as if it
    // did not exist (seed 000: "no policy" for apps it does not list). Callers check `enabled`.
    const Policy* find(std::string_view app, std::string_view name) const;
  };

  // Loads the first snapshot (the repository's error if that fails) and, with a non-zero
  // poll_interval, starts the polling thread. The repository must be thread-safe.
  static StatusOr<std::unique_ptr<PolicyCache>> open(std::shared_ptr<PolicyRepository> repository,
                                                     PolicyCacheOptions options = {});

  // Stops the polling thread.
  ~PolicyCache();
  PolicyCache(const PolicyCache&) = delete;
  PolicyCache& operator=(const PolicyCache&) = delete;

  // The current snapshot. Lock-free for readers; never null. Thread-safe.
  std::shared_ptr<const Snapshot> snapshot() const { return snapshot_.load(); }

  // snapshot()->find(app, name), kept alive by the returned pointer. Thread-safe.
  std::shared_ptr<const Policy> find(std::string_view app, std::string_view name) const;
  // The policy `name` whatever apps it lists (for service::PolicyLookup, whose callers check
  // admits_app themselves); null when there is none. Thread-safe.
  std::shared_ptr<const Policy> find(std::string_view name) const;

  // Reads the revision and, if it differs from the snapshot's, reloads and publishes a new
  // snapshot. On a repository error the current snapshot stays and the error is returned (and
  // kept in last_error()). Thread-safe; concurrent refreshes run one at a time.
  Status refresh_now();

  // Blocks until a snapshot with revision >= `revision` is published or `timeout` passes; true
  // when it was. For tests of the polling thread and for read-your-writes in admin paths.
  bool wait_for_revision(std::int64_t revision, std::chrono::milliseconds timeout) const;

  // OK, or the error of the last refresh if it failed.
  Status last_error() const;

 private:
  PolicyCache(std::shared_ptr<PolicyRepository> repository, PolicyCacheOptions options);
  void poll_loop();

  const std::shared_ptr<PolicyRepository> repository_;
  const PolicyCacheOptions options_;
  std::atomic<std::shared_ptr<const Snapshot>> snapshot_;

  Mutex refresh_mutex_;  // one refresh at a time

  mutable Mutex mutex_;      // guards the fields below
  mutable CondVar changed_;  // a snapshot was published, or stopping
  Status last_error_ SLUICE_GUARDED_BY(mutex_);
  bool stopping_ SLUICE_GUARDED_BY(mutex_) = false;
  std::thread poller_;
};

}  // namespace sluice::policy
