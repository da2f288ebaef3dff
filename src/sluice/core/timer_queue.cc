#include "sluice/core/timer_queue.h"

#include <chrono>
#include <vector>

#include "sluice/core/mutex.h"

namespace sluice {
namespace {

// Ticks without a timer before the thread stops ticking and sleeps until notified. Lingering
// spares a steady stream of short-lived timers (one caller's decisions) a wake-up each.
constexpr int kIdleTicksBeforeSleep = 500;

}  // namespace

TimerQueue::TimerQueue(const Clock& clock, Micros tick, Threading threading)
    : clock_(clock), tick_(tick > 0 ? tick : 1) {
  if (threading == Threading::kOwnThread) thread_ = std::thread([this] { run(); });
}

TimerQueue::~TimerQueue() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

TimerQueue::Handle TimerQueue::arm(Micros when, std::function<void()> fire) {
  bool notify = false;
  Handle handle{.when = when};
  {
    MutexLock lock(mutex_);
    handle.id = next_id_++;
    timers_.emplace(Key{when, handle.id}, std::move(fire));
    notify = sleeping_;
    sleeping_ = false;
  }
  if (notify) wake_.notify_one();
  return handle;
}

TimerQueue::Handle TimerQueue::after(Micros delay, std::function<void()> fire) {
  return arm(clock_.now() + delay, std::move(fire));
}

bool TimerQueue::cancel(const Handle& handle) {
  std::function<void()> dropped;  // destroyed outside the lock: it may own anything
  MutexLock lock(mutex_);
  const auto it = timers_.find(Key{handle.when, handle.id});
  if (it == timers_.end()) return false;
  dropped = std::move(it->second);
  timers_.erase(it);
  return true;
}

std::size_t TimerQueue::fire_due() {
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(mutex_);
    const Micros now = clock_.now();
    auto it = timers_.begin();
    while (it != timers_.end() && it->first.first <= now) {
      due.push_back(std::move(it->second));
      it = timers_.erase(it);
    }
  }
  for (auto& fire : due) fire();
  return due.size();
}

std::size_t TimerQueue::pending() const {
  MutexLock lock(mutex_);
  return timers_.size();
}

void TimerQueue::run() {
  int idle_ticks = 0;
  MutexLock lock(mutex_);
  while (!stopping_) {
    if (timers_.empty() && ++idle_ticks > kIdleTicksBeforeSleep) {
      sleeping_ = true;
      while (!stopping_ && sleeping_) wake_.wait(lock);
      idle_ticks = 0;
      continue;
    }
    if (!timers_.empty()) idle_ticks = 0;
    const auto next_tick = std::chrono::steady_clock::now() + std::chrono::microseconds(tick_);
    while (!stopping_ && wake_.wait_until(lock, next_tick)) {
    }
    if (stopping_) break;
    lock.unlock();
    fire_due();
    lock.lock();
  }
}

}  // namespace sluice
