#include "sluice/store/redis/sentinel_router.h"

#include "sluice/core/mutex.h"
#include "sluice/store/redis/resp_writer.h"

namespace sluice::redis::internal {

struct SentinelRouter::Command {
  ErrorReplies errors;
  Completion done;
};

SentinelRouter::SentinelRouter(asio::io_context& io, const MultiplexerOptions& options,
                               Counters& counters, FailLater fail_later, asio::ssl::context* tls)
    : io_(io),
      options_(options),
      counters_(counters),
      fail_later_(std::move(fail_later)),
      tls_(tls),
      refresh_(io, std::chrono::microseconds(options.cluster_refresh_min_interval), [this] {
        bump(counters_.map_refreshes);
        ask_sentinel(0);
      }) {
  for (const NodeAddress& sentinel : options.sentinels) {
    MultiplexerOptions node = options_;
    node.host = sentinel.host;
    node.port = sentinel.port;
    node.username.clear();
    node.password.clear();
    node.db = 0;
    node.connections = 1;
    node.sentinels.clear();
    node.engine.probe = false;  // a sentinel runs no scripts
    sentinels_.push_back(std::make_unique<NodePool>(io_, std::move(node), counters_, tls_));
  }
  refresh_.request();
}

ScriptEngine SentinelRouter::engine() const {
  const NodePool* master = master_.load(std::memory_order_acquire);
  return master == nullptr ? ScriptEngine::kScripts : master->engine();
}

bool SentinelRouter::wait_for_master(std::chrono::microseconds timeout) {
  MutexLock lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!answered_once_ && !closed_ && learnt_.wait_until(lock, deadline)) {
  }
  return (answered_once_ || closed_) && master_.load() != nullptr;
}

void SentinelRouter::submit(std::string_view formatted, ErrorReplies errors, Completion done) {
  NodePool* master = master_.load(std::memory_order_acquire);
  if (master == nullptr) {
    refresh_.request();
    MutexLock lock(mu_);
    // Sentinels that answered but do not know the name: a configuration error, not an outage.
    const StatusCode code = last_refresh_error_.code() == StatusCode::kFailedPrecondition
                                ? StatusCode::kFailedPrecondition
                                : StatusCode::kUnavailable;
    fail_later_(
        std::move(done),
        Status(code, "redis sentinel: master \"" + options_.sentinel_master + "\" not known yet" +
                         (last_refresh_error_.ok() ? "" : ": " + last_refresh_error_.message())));
    return;
  }
  auto command = std::make_shared<Command>(Command{.errors = errors, .done = std::move(done)});
  Completion attempt{
      .callback = [this, command](StatusOr<Reply> result) { on_reply(command, std::move(result)); },
      .submitter_writes = command->done.waiter != nullptr || command->done.submitter_writes};
  if (master->try_submit(formatted, attempt, ErrorReplies::kAsReply)) return;
  bump(counters_.rejected);
  refresh_.request();  // the master cannot be reached: maybe a failover
  fail_later_(std::move(command->done), master->unavailable_status());
}

void SentinelRouter::on_reply(const std::shared_ptr<Command>& command, StatusOr<Reply> result) {
  if (!result.ok()) {
    if (result.status().code() == StatusCode::kUnavailable ||
        result.status().code() == StatusCode::kDeadlineExceeded) {
      refresh_.request();
    }
    complete(command->done, std::move(result));
    return;
  }
  if (result->is_error()) {
    // A demoted master refuses writes: ask who the master is now.
    if (result->as_string().starts_with("READONLY")) refresh_.request();
    if (command->errors == ErrorReplies::kAsStatus) {
      complete(command->done, error_reply_status(result->as_string()));
      return;
    }
  }
  complete(command->done, std::move(result));
}

void SentinelRouter::ask_sentinel(std::size_t i) {
  for (; i < sentinels_.size(); ++i) {
    std::string& formatted = scratch_buffer();
    const std::vector<std::string> args = {"SENTINEL", "get-master-addr-by-name",
                                           options_.sentinel_master};
    append_command(formatted, args);
    Completion asked{.callback = [this, i](StatusOr<Reply> result) {
      if (result.ok() && result->is_array() && result->elements().size() == 2 &&
          result->elements()[0].is_string() && result->elements()[1].is_string()) {
        int port = 0;
        try {
          port = std::stoi(result->elements()[1].as_string());
        } catch (...) {
          port = 0;
        }
        if (port > 0 && port <= 65535) {
          learn(NodeAddress{result->elements()[0].as_string(), static_cast<std::uint16_t>(port)});
          end_refresh(Status());
          return;
        }
      }
      if (result.ok() && result->is_nil()) {
        // This sentinel does not monitor that name; another may (a typo is the usual cause).
        MutexLock lock(mu_);
        last_refresh_error_ =
            Status(StatusCode::kFailedPrecondition, "sentinel " + sentinels_[i]->name() +
                                                        " does not monitor a master named \"" +
                                                        options_.sentinel_master + "\"");
      } else if (!result.ok()) {
        MutexLock lock(mu_);
        last_refresh_error_ = result.status();
      }
      ask_sentinel(i + 1);
    }};
    if (sentinels_[i]->try_submit(formatted, asked, ErrorReplies::kAsStatus)) return;
  }
  Status outcome;
  {
    MutexLock lock(mu_);
    outcome = last_refresh_error_.ok()
                  ? unavailable("redis sentinel: no sentinel answered for master \"" +
                                options_.sentinel_master + "\"")
                  : last_refresh_error_;
  }
  end_refresh(outcome);
}

void SentinelRouter::learn(NodeAddress master) {
  MutexLock lock(mu_);
  if (closed_ || (master_address_ && *master_address_ == master)) return;
  MultiplexerOptions node = options_;
  node.host = master.host;
  node.port = master.port;
  node.sentinels.clear();
  masters_.push_back(std::make_unique<NodePool>(io_, std::move(node), counters_, tls_));
  master_address_ = std::move(master);
  master_.store(masters_.back().get(), std::memory_order_release);
}

void SentinelRouter::end_refresh(const Status& outcome) {
  {
    MutexLock lock(mu_);
    last_refresh_error_ = outcome;
    answered_once_ = true;
    learnt_.notify_all();
  }
  refresh_.done();
}

void SentinelRouter::close() {
  refresh_.close();
  MutexLock lock(mu_);
  closed_ = true;
  for (const auto& sentinel : sentinels_) sentinel->close();
  for (const auto& master : masters_) master->close();
  learnt_.notify_all();
}

int SentinelRouter::ready_connections() const {
  NodePool* master = master_.load(std::memory_order_acquire);
  return master == nullptr ? 0 : master->ready_connections();
}

std::string SentinelRouter::master_address() const {
  MutexLock lock(mu_);
  return master_address_ ? master_address_->text() : "";
}

}  // namespace sluice::redis::internal
