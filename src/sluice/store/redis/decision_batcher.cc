#include "sluice/store/redis/decision_batcher.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "sluice/core/mutex.h"
#include "sluice/core/waiter.h"
#include "sluice/store/redis/script_set.h"

namespace sluice::store {

// One decision waiting for its part of a reply: a blocked caller's (on its stack, `done` empty,
// woken through `result`) or an async one's (on the heap, deleted once `done` ran).
struct DecisionBatcher::Entry {
  std::vector<std::string> keys;
  std::string request;
  std::size_t reply_bytes = 0;
  Callback done;
  Waiter<StatusOr<std::string>> result;
};

namespace {

// Hands an entry its result. Afterwards the entry may be gone (its caller returned).
template <typename EntryType>
void deliver(EntryType* entry, StatusOr<std::string> result) {
  if (entry->done) {
    const std::unique_ptr<EntryType> owned(entry);
    entry->done(std::move(result));
  } else {
    entry->result.set(std::move(result));
  }
}

}  // namespace

DecisionBatcher::DecisionBatcher(std::shared_ptr<redis::Multiplexer> client, redis::Script script,
                                 DecisionBatcherOptions options)
    : client_(std::move(client)), script_(std::move(script)), options_(options) {}

DecisionBatcher::~DecisionBatcher() {
  MutexLock lock(mu_);
  while (in_flight_ != 0) idle_.wait(lock);
}

StatusOr<std::string> DecisionBatcher::decide(std::vector<std::string> keys, std::string request,
                                              std::size_t reply_bytes) {
  Entry entry{.keys = std::move(keys), .request = std::move(request), .reply_bytes = reply_bytes};
  submit(&entry);
  return entry.result.wait(client_->options().blocking_spin);
}

void DecisionBatcher::decide_async(std::vector<std::string> keys, std::string request,
                                   std::size_t reply_bytes, Callback done) {
  submit(new Entry{.keys = std::move(keys),
                   .request = std::move(request),
                   .reply_bytes = reply_bytes,
                   .done = std::move(done)});
}

void DecisionBatcher::submit(Entry* entry) {
  std::vector<Entry*> batch;
  {
    MutexLock lock(mu_);
    queue_.push_back(entry);
    if (in_flight_ == 0) {  // further calls leave only from complete(): see send_early
      ++in_flight_;
      batch = take_locked();
    }
  }
  if (!batch.empty()) send(std::move(batch));
}

std::vector<DecisionBatcher::Entry*> DecisionBatcher::take_locked() {
  const std::size_t n = std::min(queue_.size(), std::max<std::size_t>(options_.max_batch, 1));
  std::vector<Entry*> batch(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(n));
  stats_.decisions += n;
  ++stats_.calls;
  outstanding_ += n;
  stats_.most_in_flight = std::max(stats_.most_in_flight, in_flight_);
  return batch;
}

void DecisionBatcher::send(std::vector<Entry*> batch) {
  // Equal requests (one policy, no lease id) travel once, with a repeat count, so Redis reads and
  // unpacks them once (evaluate.lua): the batch is regrouped, equal requests together in order of
  // first appearance. Every decision of a call was waiting at the same time (none had its
  // answer), so any order is one they could have arrived in.
  std::vector<std::vector<Entry*>> runs;  // entries with equal requests
  for (Entry* entry : batch) {
    const auto run = std::find_if(runs.begin(), runs.end(), [&](const std::vector<Entry*>& r) {
      return r.front()->request == entry->request;
    });
    if (run == runs.end()) {
      runs.push_back({entry});
    } else {
      run->push_back(entry);
    }
  }
  batch.clear();
  std::vector<std::string> keys;
  std::vector<std::string> args;
  for (const std::vector<Entry*>& run : runs) {
    for (Entry* entry : run) {
      batch.push_back(entry);
      for (std::string& key : entry->keys) keys.push_back(std::move(key));
    }
    args.push_back(std::move(run.front()->request));
    set_request_repeats(args.back(), run.size());
  }
  append_pinned_time(args, options_.pinned_clock_for_tests);
  client_->async_eval_script(
      script_, std::move(keys), std::move(args),
      [this, batch = std::move(batch)](StatusOr<redis::Reply> reply) {
        complete(batch, std::move(reply));
      },
      redis::Dispatch::kImmediate);
}

void DecisionBatcher::complete(const std::vector<Entry*>& batch, StatusOr<redis::Reply> reply) {
  // When Redis has nothing else to do, the decisions already queued leave before anyone is
  // woken: Redis gets work while the callers wake up. That call takes over this one's slot.
  // Otherwise the slot stays taken until everyone is told, so what the callers submit meanwhile
  // (an async caller's next decision, at once) joins the queue and leaves in one call below
  // instead of one by one.
  std::vector<Entry*> next;
  {
    MutexLock lock(mu_);
    outstanding_ -= batch.size();
    if (!queue_.empty() && outstanding_ == 0) next = take_locked();
  }
  const bool slot_passed_on = !next.empty();
  if (slot_passed_on) send(std::move(next));

  std::size_t expected = 0;
  for (const Entry* entry : batch) expected += entry->reply_bytes;
  if (reply.ok() && (!reply->is_string() || reply->as_string().size() != expected)) {
    reply = internal_error("redis store: unexpected script reply " + reply->debug_string());
  }
  std::size_t offset = 0;
  const std::size_t half = batch.size() / 2;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    Entry* entry = batch[i];
    const std::size_t size = entry->reply_bytes;  // read first: after deliver it may be gone
    if (reply.ok()) {
      deliver(entry, std::string(std::string_view(reply->as_string()).substr(offset, size)));
    } else {
      deliver(entry, reply.status());
    }
    offset += size;
    if (i + 1 == half) send_early(half);
  }

  if (slot_passed_on) return;
  {
    MutexLock lock(mu_);
    if (queue_.empty()) {
      if (--in_flight_ == 0) idle_.notify_all();
      return;  // nothing touches `this` after the unlock: the destructor may run
    }
    next = take_locked();
  }
  send(std::move(next));
}

void DecisionBatcher::send_early(std::size_t answered) {
  std::vector<Entry*> next;
  {
    MutexLock lock(mu_);
    // Only when Redis has fewer decisions to work on than were answered so far: then the next
    // decisions of the callers answered so far (async callers resubmit from inside their
    // callback; woken threads as they come) run in Redis while the rest are being answered.
    if (in_flight_ >= options_.batches_in_flight || queue_.empty() || outstanding_ >= answered) {
      return;
    }
    ++in_flight_;
    next = take_locked();
  }
  send(std::move(next));
}

DecisionBatchStats DecisionBatcher::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

}  // namespace sluice::store
