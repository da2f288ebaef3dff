#include "sluice/store/redis/decision_batcher.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "sluice/store/redis/waiter.h"

namespace sluice::store {

struct DecisionBatcher::Entry {
  std::vector<std::string> keys;
  std::string request;
  std::size_t reply_bytes = 0;
  redis::Waiter<StatusOr<std::string>> result;
};

DecisionBatcher::DecisionBatcher(std::shared_ptr<redis::Client> client, redis::Script script,
                                 DecisionBatcherOptions options)
    : client_(std::move(client)), script_(std::move(script)), options_(options) {}

StatusOr<std::string> DecisionBatcher::decide(std::vector<std::string> keys, std::string request,
                                              std::size_t reply_bytes) {
  Entry entry{.keys = std::move(keys), .request = std::move(request), .reply_bytes = reply_bytes};
  std::vector<Entry*> batch;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(&entry);
    if (in_flight_ < options_.batches_in_flight) {
      ++in_flight_;
      batch = take_locked();
    }
  }
  if (!batch.empty()) send(std::move(batch));
  return entry.result.wait();
}

std::vector<DecisionBatcher::Entry*> DecisionBatcher::take_locked() {
  const std::size_t n = std::min(queue_.size(), std::max<std::size_t>(options_.max_batch, 1));
  std::vector<Entry*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  stats_.decisions += n;
  ++stats_.calls;
  return batch;
}

void DecisionBatcher::send(std::vector<Entry*> batch) {
  std::vector<std::string> keys;
  std::vector<std::string> args;
  args.reserve(batch.size() + 1);
  for (Entry* entry : batch) {
    for (std::string& key : entry->keys) keys.push_back(std::move(key));
    args.push_back(std::move(entry->request));
  }
  if (options_.pinned_clock_for_tests != nullptr) {
    args.push_back(std::to_string(options_.pinned_clock_for_tests->now()));
  }
  client_->async_eval_script(
      script_, std::move(keys), std::move(args),
      [this, batch = std::move(batch)](StatusOr<redis::Reply> reply) {
        complete(batch, std::move(reply));
      },
      redis::Dispatch::kImmediate);
}

void DecisionBatcher::complete(const std::vector<Entry*>& batch, StatusOr<redis::Reply> reply) {
  // The next call leaves before anyone is woken: Redis gets work while the callers wake up.
  std::vector<Entry*> next;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) {
      --in_flight_;
    } else {
      next = take_locked();
    }
  }
  if (!next.empty()) send(std::move(next));

  // Nothing below touches `this`: once the last entry is set, its caller may destroy the batcher.
  std::size_t expected = 0;
  for (const Entry* entry : batch) expected += entry->reply_bytes;
  if (reply.ok() && (!reply->is_string() || reply->as_string().size() != expected)) {
    reply = internal_error("redis store: unexpected script reply " + reply->debug_string());
  }
  if (!reply.ok()) {
    for (Entry* entry : batch) entry->result.set(reply.status());
    return;
  }
  const std::string_view bytes = reply->as_string();
  std::size_t offset = 0;
  for (Entry* entry : batch) {
    const std::size_t size = entry->reply_bytes;  // read before set(): then the entry may be gone
    entry->result.set(std::string(bytes.substr(offset, size)));
    offset += size;
  }
}

DecisionBatchStats DecisionBatcher::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace sluice::store
