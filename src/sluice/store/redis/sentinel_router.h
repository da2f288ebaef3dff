// sluice::redis::internal::SentinelRouter: sends every command to the master that Redis Sentinel
// names for `sentinel_master`, and follows it through failovers. Internal to the client.
//
// - The master's address comes from `SENTINEL get-master-addr-by-name`, asked of the sentinels in
//   turn (the first that answers decides), at start and again, at most once per
//   `cluster_refresh_min_interval`, whenever the master cannot be reached, a command on it fails
//   with a lost connection or a timeout, or it answers READONLY (it was demoted to a replica).
// - A new address gets its own connections; the old ones stay open but unused (a demoted master
//   is never written to) until the client is destroyed.
// - Commands are never re-sent: a command that failed with the old master takes its policy's
//   failure mode, as with a single Redis (it may have run).
// Sentinels are asked without credentials (the URL's user and password are the master's).
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/core/mutex.h"
#include "sluice/store/redis/connection.h"
#include "sluice/store/redis/node_pool.h"
#include "sluice/store/redis/refresh_throttle.h"

namespace sluice::redis::internal {

class SentinelRouter {
 public:
  using FailLater = std::function<void(Completion, Status)>;
  SentinelRouter(asio::io_context& io, const MultiplexerOptions& options, Counters& counters,
                 FailLater fail_later, asio::ssl::context* tls = nullptr);

  SentinelRouter(const SentinelRouter&) = delete;
  SentinelRouter& operator=(const SentinelRouter&) = delete;

  // Waits up to `timeout` for the first answer from the sentinels (so that a client made at start
  // does not fail its first commands while it asks). False when none came.
  bool wait_for_master(std::chrono::microseconds timeout);

  void submit(std::string_view formatted, ErrorReplies errors, Completion done);
  // The engine of the master commands go to now (kScripts before the sentinels answered).
  ScriptEngine engine() const;
  void close();

  int ready_connections() const;
  // The master's address as last learnt ("" before the sentinels answered).
  std::string master_address() const;

 private:
  struct Command;
  void on_reply(const std::shared_ptr<Command>& command, StatusOr<Reply> result);
  void ask_sentinel(std::size_t i);
  void learn(NodeAddress master);
  void end_refresh(const Status& outcome);

  asio::io_context& io_;
  const MultiplexerOptions& options_;
  Counters& counters_;
  const FailLater fail_later_;
  asio::ssl::context* const tls_;
  std::vector<std::unique_ptr<NodePool>> sentinels_;

  mutable Mutex mu_;
  CondVar learnt_;
  std::atomic<NodePool*> master_{nullptr};  // null until the sentinels answered
  std::optional<NodeAddress> master_address_ SLUICE_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<NodePool>> masters_
      SLUICE_GUARDED_BY(mu_);  // every master ever learnt; the last is current
  Status last_refresh_error_ SLUICE_GUARDED_BY(mu_);
  bool answered_once_ SLUICE_GUARDED_BY(mu_) = false;
  bool closed_ SLUICE_GUARDED_BY(mu_) = false;
  RefreshThrottle refresh_;  // last: its reads use the members above
};

}  // namespace sluice::redis::internal
