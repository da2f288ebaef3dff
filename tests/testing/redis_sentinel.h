// RedisSentinelGroup: a real Redis Sentinel setup for integration tests — a master, one replica
// and `sentinels` sentinels (quorum: a majority), each on a free loopback port in its own
// directory, stopped by PID. Sentinels are `redis-server <conf> --sentinel` processes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/status.h"
#include "testing/redis_server.h"

namespace sluice::test {

struct RedisSentinelOptions {
  int sentinels = 3;
  std::string master_name = "sluice-master";
  // How long the master must be silent before the sentinels call it down and fail over.
  std::chrono::milliseconds down_after{1000};
};

class RedisSentinelGroup {
 public:
  // Starts the master, its replica and the sentinels, and waits until every sentinel knows the
  // replica and the other sentinels (a failover is then possible).
  static StatusOr<std::unique_ptr<RedisSentinelGroup>> start(RedisSentinelOptions options = {});
  ~RedisSentinelGroup();

  RedisSentinelGroup(const RedisSentinelGroup&) = delete;
  RedisSentinelGroup& operator=(const RedisSentinelGroup&) = delete;

  RedisServer& master() { return *master_; }
  RedisServer& replica() { return *replica_; }
  // "redis+sentinel://127.0.0.1:s1,…/<master name>".
  std::string url() const;
  // The master's port as the first live sentinel reports it now.
  StatusOr<std::uint16_t> reported_master_port() const;

 private:
  explicit RedisSentinelGroup(RedisSentinelOptions options) : options_(std::move(options)) {}
  Status start_sentinel(const std::string& dir);
  Status wait_until_ready(std::chrono::milliseconds timeout) const;

  RedisSentinelOptions options_;
  std::unique_ptr<RedisServer> master_;
  std::unique_ptr<RedisServer> replica_;
  std::vector<std::uint16_t> sentinel_ports_;
  std::vector<pid_t> sentinel_pids_;
  std::vector<std::string> sentinel_dirs_;
};

}  // namespace sluice::test
