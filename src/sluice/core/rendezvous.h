// Rendezvous: the calling thread waits for a value another thread delivers once — how blocking
// calls are built over asynchronous ones (Limiter::acquire_blocking, the library's Client).
// Share it by shared_ptr so that a late delivery never outlives it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>

namespace sluice {

template <typename T>
class Rendezvous {
 public:
  void deliver(T value) {
    {
      std::lock_guard lock(mutex_);
      value_.emplace(std::move(value));
    }
    ready_.notify_one();
  }
  T wait() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return value_.has_value(); });
    return std::move(*value_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::optional<T> value_;
};

}  // namespace sluice
