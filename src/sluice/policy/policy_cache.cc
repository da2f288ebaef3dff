#include "sluice/policy/policy_cache.h"

#include <utility>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/core/status_macros.h"

namespace sluice::policy {

const Policy* PolicyCache::Snapshot::find(std::string_view app, std::string_view name) const {
  const auto it = policies.find(name);
  if (it == policies.end() || !it->second->admits_app(app)) return nullptr;
  return it->second.get();
}

PolicyCache::PolicyCache(std::shared_ptr<PolicyRepository> repository, PolicyCacheOptions options)
    : repository_(std::move(repository)), options_(options) {}

StatusOr<std::unique_ptr<PolicyCache>> PolicyCache::open(
    std::shared_ptr<PolicyRepository> repository, PolicyCacheOptions options) {
  if (repository == nullptr) return invalid_argument("policy cache: no repository");
  std::unique_ptr<PolicyCache> cache(new PolicyCache(std::move(repository), options));
  // The first load must happen even when the revision is 0 (an empty, never-written store).
  cache->snapshot_.store(std::make_shared<const Snapshot>(Snapshot{.revision = -1}));
  SLUICE_RETURN_IF_ERROR(cache->refresh_now());
  if (options.poll_interval.count() > 0) {
    cache->poller_ = std::thread([raw = cache.get()] { raw->poll_loop(); });
  }
  return cache;
}

PolicyCache::~PolicyCache() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (poller_.joinable()) poller_.join();
}

std::shared_ptr<const Policy> PolicyCache::find(std::string_view app, std::string_view name) const {
  std::shared_ptr<const Snapshot> current = snapshot();
  const auto it = current->policies.find(name);
  if (it == current->policies.end() || !it->second->admits_app(app)) return nullptr;
  return it->second;
}

std::shared_ptr<const Policy> PolicyCache::find(std::string_view name) const {
  std::shared_ptr<const Snapshot> current = snapshot();
  const auto it = current->policies.find(name);
  return it == current->policies.end() ? nullptr : it->second;
}

Status PolicyCache::refresh_now() {
  MutexLock refresh_lock(refresh_mutex_);
  Status status = [&]() -> Status {
    // Read the revision before the policies: the snapshot then holds at least that revision,
    // and a change committed in between is seen again by the next poll.
    SLUICE_ASSIGN_OR_RETURN(std::int64_t revision, repository_->revision());
    if (revision == snapshot_.load()->revision) return Status();
    SLUICE_ASSIGN_OR_RETURN(std::vector<Policy> policies, repository_->list());
    auto next = std::make_shared<Snapshot>();
    next->revision = revision;
    next->policies.reserve(policies.size());
    for (Policy& policy : policies) {
      std::string name = policy.name;
      next->policies.emplace(std::move(name), std::make_shared<const Policy>(std::move(policy)));
    }
    snapshot_.store(std::move(next));
    return Status();
  }();
  {
    MutexLock lock(mutex_);
    last_error_ = status;
  }
  changed_.notify_all();
  return status;
}

bool PolicyCache::wait_for_revision(std::int64_t revision,
                                    std::chrono::milliseconds timeout) const {
  MutexLock lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (snapshot_.load()->revision < revision) {
    if (!changed_.wait_until(lock, deadline)) return snapshot_.load()->revision >= revision;
  }
  return true;
}

Status PolicyCache::last_error() const {
  MutexLock lock(mutex_);
  return last_error_;
}

void PolicyCache::poll_loop() {
  MutexLock lock(mutex_);
  while (!stopping_) {
    const auto next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
    while (!stopping_ && changed_.wait_until(lock, next_poll)) {
    }
    if (stopping_) break;
    lock.unlock();
    (void)refresh_now();  // errors are kept in last_error(); the old snapshot stays
    lock.lock();
  }
}

}  // namespace sluice::policy
