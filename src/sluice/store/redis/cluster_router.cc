#include "sluice/store/redis/cluster_router.h"

#include <algorithm>
#include <set>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/hash_slot.h"
#include "sluice/store/redis/resp_writer.h"

namespace sluice::redis::internal {

namespace {

constexpr std::string_view kClusterShardsCommand = "*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n";
constexpr std::string_view kClusterSlotsCommand = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";

// TRYAGAIN / CLUSTERDOWN: the n-th re-send waits 5 ms · 2^n, at most 100 ms.
std::chrono::milliseconds retry_delay(int retries) {
  return std::chrono::milliseconds(std::min(100, 5 << std::min(retries, 5)));
}

}  // namespace

// A command on its way through the cluster: kept until it completes so that a redirection can
// re-send the same bytes.
struct ClusterRouter::Command {
  std::string formatted;
  std::optional<int> slot;
  ErrorReplies errors;
  Completion done;
  SteadyClock::time_point deadline;  // re-sends stop here (the client's command_timeout)
  int redirections = 0;
  int retries = 0;
};

ClusterRouter::ClusterRouter(asio::io_context& io, const MultiplexerOptions& options,
                             Counters& counters, FailLater fail_later, asio::ssl::context* tls)
    : io_(io),
      options_(options),
      counters_(counters),
      fail_later_(std::move(fail_later)),
      tls_(tls),
      seeds_(options.cluster_seeds),
      slot_owner_(kClusterSlots, nullptr),
      refresh_(io, std::chrono::microseconds(options.cluster_refresh_min_interval),
               [this] { start_refresh(); }) {
  for (const NodeAddress& seed : seeds_) pool_at(seed);
  refresh_.request();
}

NodePool* ClusterRouter::pool_at(const NodeAddress& address) {
  MutexLock lock(pools_mu_);
  if (pools_closed_) {
    // A reply handled while the client closes may name a node never seen: connecting to it now
    // would keep the I/O threads (and the client's destructor) waiting for it.
    const auto known = pools_.find(address);
    return known == pools_.end() ? nullptr : known->second.get();
  }
  std::unique_ptr<NodePool>& pool = pools_[address];
  if (!pool) {
    MultiplexerOptions node = options_;
    node.host = address.host;
    node.port = address.port;
    node.cluster_seeds.clear();
    pool = std::make_unique<NodePool>(io_, std::move(node), counters_, tls_);
  }
  return pool.get();
}

ScriptEngine ClusterRouter::engine_for_slot(std::optional<int> slot) {
  const NodePool* pool = pool_for_slot(slot);
  return pool == nullptr ? ScriptEngine::kScripts : pool->engine();
}

std::vector<std::pair<std::string, ScriptEngine>> ClusterRouter::engines() const {
  std::vector<const NodePool*> masters;
  {
    ReaderLock lock(map_mu_);
    for (const NodePool* owner : slot_owner_) {
      if (owner != nullptr && std::find(masters.begin(), masters.end(), owner) == masters.end()) {
        masters.push_back(owner);
      }
    }
  }
  std::vector<std::pair<std::string, ScriptEngine>> out;
  for (const NodePool* pool : masters) out.emplace_back(pool->name(), pool->engine());
  std::sort(out.begin(), out.end());
  return out;
}

NodePool* ClusterRouter::pool_for_slot(std::optional<int> slot) {
  if (slot) {
    ReaderLock lock(map_mu_);
    if (NodePool* owner = slot_owner_[static_cast<std::size_t>(*slot)]; owner != nullptr) {
      return owner;
    }
  } else {
    // A keyless command: the first master of the map, else a seed.
    ReaderLock lock(map_mu_);
    for (NodePool* owner : slot_owner_) {
      if (owner != nullptr) return owner;
    }
  }
  return seeds_.empty() ? nullptr : pool_at(seeds_.front());
}

void ClusterRouter::submit(std::string_view formatted, std::optional<int> slot, ErrorReplies errors,
                           Completion done) {
  auto command = std::make_shared<Command>(Command{
      .formatted = std::string(formatted),
      .slot = slot,
      .errors = errors,
      .done = std::move(done),
      .deadline = SteadyClock::now() + std::chrono::microseconds(options_.command_timeout)});
  NodePool* pool = pool_for_slot(slot);
  Completion attempt{
      .callback = [this, command,
                   pool](StatusOr<Reply> result) { on_reply(command, pool, std::move(result)); },
      // The first attempt keeps the caller's way of leaving (client.h, Dispatch).
      .submitter_writes = command->done.waiter != nullptr || command->done.submitter_writes};
  if (pool != nullptr && pool->try_submit(command->formatted, attempt, ErrorReplies::kAsReply)) {
    return;
  }
  bump(counters_.rejected);
  refresh_.request();
  fail_later_(std::move(command->done),
              pool != nullptr ? pool->unavailable_status()
                              : unavailable("redis cluster: no node known to serve slot " +
                                            std::to_string(slot.value_or(-1))));
}

// Re-sends from an I/O thread (after a redirection or a backoff): failures complete in place.
void ClusterRouter::send(const std::shared_ptr<Command>& command, NodePool* pool, bool asking) {
  Completion attempt{.callback = [this, command, pool](StatusOr<Reply> result) {
    on_reply(command, pool, std::move(result));
  }};
  if (pool->try_submit(command->formatted, attempt, ErrorReplies::kAsReply, asking)) return;
  bump(counters_.rejected);
  refresh_.request();
  finish(command, pool->unavailable_status());
}

void ClusterRouter::on_reply(const std::shared_ptr<Command>& command, NodePool* pool,
                             StatusOr<Reply> result) {
  if (!result.ok()) {
    // The node is gone or stalled: maybe a failover. The command may have run, so it is not
    // re-sent; the map is read again for the next ones.
    if (result.status().code() == StatusCode::kUnavailable ||
        result.status().code() == StatusCode::kDeadlineExceeded) {
      refresh_.request();
    }
    finish(command, std::move(result));
    return;
  }
  if (!result->is_error()) {
    finish(command, std::move(result));
    return;
  }
  const std::string& message = result->as_string();
  if (std::optional<Redirection> redirection = parse_redirection(message)) {
    if (++command->redirections > options_.max_redirections) {
      finish(command,
             unavailable("redis cluster: more than " + std::to_string(options_.max_redirections) +
                         " redirections, last: " + message));
      return;
    }
    bump(counters_.redirections);
    if (redirection->to.host.empty()) redirection->to.host = pool->options().host;
    NodePool* target = pool_at(redirection->to);
    if (target == nullptr) {
      finish(command, Status(StatusCode::kCancelled, "redis client is shutting down"));
      return;
    }
    const bool asking = redirection->kind == Redirection::Kind::kAsk;
    if (!asking) {
      {
        WriterLock lock(map_mu_);
        slot_owner_[static_cast<std::size_t>(redirection->slot)] = target;
      }
      refresh_.request();  // one slot moved: others probably did too
    }
    send(command, target, asking);
    return;
  }
  if (is_retryable_cluster_error(message) &&
      SteadyClock::now() + retry_delay(command->retries) < command->deadline) {
    if (message.starts_with("CLUSTERDOWN")) refresh_.request();
    retry_later(command);
    return;
  }
  if (message.starts_with("READONLY") || message.starts_with("CLUSTERDOWN")) refresh_.request();
  if (command->errors == ErrorReplies::kAsReply) {
    finish(command, std::move(result));
  } else {
    finish(command, error_reply_status(message));
  }
}

void ClusterRouter::retry_later(const std::shared_ptr<Command>& command) {
  bump(counters_.retries);
  auto timer = std::make_shared<asio::steady_timer>(io_, retry_delay(command->retries++));
  timer->async_wait([this, command, timer](const boost::system::error_code&) {
    NodePool* pool = pool_for_slot(command->slot);
    if (pool == nullptr) {
      finish(command, unavailable("redis cluster: no node known to serve slot " +
                                  std::to_string(command->slot.value_or(-1))));
      return;
    }
    send(command, pool, false);
  });
}

void ClusterRouter::finish(const std::shared_ptr<Command>& command, StatusOr<Reply> result) {
  complete(command->done, std::move(result));
}

void ClusterRouter::start_refresh() {
  // Every known master, then the seeds and every other node ever seen (a promoted replica may
  // only be known through them), each asked once.
  auto candidates = std::make_shared<std::vector<NodePool*>>();
  {
    ReaderLock lock(map_mu_);
    std::set<NodePool*> seen;
    for (NodePool* owner : slot_owner_) {
      if (owner != nullptr && seen.insert(owner).second) candidates->push_back(owner);
    }
  }
  {
    MutexLock lock(pools_mu_);
    for (const auto& [address, pool] : pools_) {
      if (std::find(candidates->begin(), candidates->end(), pool.get()) == candidates->end()) {
        candidates->push_back(pool.get());
      }
    }
  }
  bump(counters_.map_refreshes);
  refresh_from(candidates, 0, false);
}

void ClusterRouter::refresh_from(std::shared_ptr<std::vector<NodePool*>> candidates, std::size_t i,
                                 bool use_cluster_slots) {
  for (; i < candidates->size(); ++i) {
    NodePool* pool = (*candidates)[i];
    Completion asked{
        .callback = [this, candidates, i, pool, use_cluster_slots](StatusOr<Reply> result) {
          const NodeAddress address{pool->options().host, pool->options().port};
          if (result.ok() && result->is_error() && !use_cluster_slots &&
              result->as_string().find("nknown subcommand") != std::string::npos) {
            refresh_from(candidates, i, true);  // before Redis 7.0: CLUSTER SLOTS
            return;
          }
          if (result.ok() && !result->is_error()) {
            StatusOr<std::vector<SlotRange>> ranges =
                use_cluster_slots ? slot_ranges_from_slots(*result, address)
                                  : slot_ranges_from_shards(*result, address, tls_ != nullptr);
            if (ranges.ok() && !ranges->empty()) {
              install(*ranges);
              refresh_.done();
              return;
            }
          }
          refresh_from(candidates, i + 1, false);
        }};
    if (pool->try_submit(use_cluster_slots ? kClusterSlotsCommand : kClusterShardsCommand, asked,
                         ErrorReplies::kAsReply)) {
      return;
    }
  }
  refresh_.done();  // nobody answered; the next failure asks again (throttled)
}

void ClusterRouter::install(const std::vector<SlotRange>& ranges) {
  std::vector<NodePool*> owners(kClusterSlots, nullptr);
  for (const SlotRange& range : ranges) {
    NodePool* pool = pool_at(range.master);
    if (pool == nullptr) return;  // closing
    for (int slot = range.first; slot <= range.last; ++slot) {
      owners[static_cast<std::size_t>(slot)] = pool;
    }
  }
  WriterLock lock(map_mu_);
  slot_owner_.swap(owners);
}

void ClusterRouter::close() {
  refresh_.close();
  MutexLock lock(pools_mu_);
  pools_closed_ = true;
  for (const auto& [address, pool] : pools_) pool->close();
}

int ClusterRouter::ready_connections() const {
  MutexLock lock(pools_mu_);
  int ready = 0;
  for (const auto& [address, pool] : pools_) ready += pool->ready_connections();
  return ready;
}

int ClusterRouter::masters() const {
  ReaderLock lock(map_mu_);
  std::set<NodePool*> owners(slot_owner_.begin(), slot_owner_.end());
  owners.erase(nullptr);
  return static_cast<int>(owners.size());
}

}  // namespace sluice::redis::internal
