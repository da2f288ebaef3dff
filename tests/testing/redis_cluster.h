// RedisCluster: a real Redis Cluster for integration tests and benchmarks — `masters` masters with
// `replicas_per_master` replicas each, every node a RedisServer (redis_server.h) on a free loopback
// port started with `--cluster-enabled yes`, joined by `redis-cli --cluster create`, and stopped
// by PID. Nodes run with `cluster-require-full-coverage no` (as docs/redis.md recommends), so a
// failed master stops only its own slots.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sluice/status.h"
#include "testing/redis_server.h"
#include "testing/test_certificates.h"

namespace sluice::test {

struct RedisClusterOptions {
  int masters = 3;
  int replicas_per_master = 1;
  // How long a master must be unreachable before the others mark it failed and its replica takes
  // over (cluster-node-timeout).
  std::chrono::milliseconds node_timeout{1000};
  // Not null: every node also listens for TLS on a port of its own (tls_port(i)), and the
  // cluster bus and replication run over TLS, with these certificates.
  const TestCertificates* tls = nullptr;
  // More `redis-server` arguments for every node (e.g. {"--enable-module-command", "local"}).
  std::vector<std::string> extra_args;
};

class RedisCluster {
 public:
  // Starts the nodes, creates the cluster and waits until every node reports cluster_state:ok
  // and agrees on the slot map.
  static StatusOr<std::unique_ptr<RedisCluster>> start(RedisClusterOptions options = {});

  // Every node, masters first in creation order (redis-cli assigns slots to the first `masters`).
  const std::vector<std::unique_ptr<RedisServer>>& nodes() const { return nodes_; }
  RedisServer& node(std::size_t i) { return *nodes_[i]; }
  // "redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…" over every node.
  std::string url() const;
  // "redis+cluster://127.0.0.1:p" of one seed node only.
  std::string url_with_one_seed() const;
  // With options.tls: node i's TLS port, and "rediss+cluster://127.0.0.1:<tls port of node 0>"
  // with the CA as tls_ca.
  std::uint16_t tls_port(std::size_t i) const { return tls_ports_[i]; }
  std::string tls_url() const;

  // `redis-cli -p <port of node i> <args…>`, its output trimmed; error when it exits non-zero.
  StatusOr<std::string> cli(std::size_t i, const std::vector<std::string>& args) const;
  // The port of the master that owns `slot` now, as node `asking` sees it (CLUSTER SHARDS).
  StatusOr<std::uint16_t> master_of_slot(int slot, std::size_t asking = 0) const;
  // Waits until every live node says cluster_state:ok and agrees on which node serves every
  // slot; DeadlineExceeded after `timeout`.
  Status wait_until_stable(std::chrono::milliseconds timeout = std::chrono::seconds(30)) const;
  // Moves `count` slots from the master on port `from` to the master on port `to` with
  // `redis-cli --cluster reshard` (which migrates their keys).
  Status reshard(std::uint16_t from, std::uint16_t to, int count) const;

 private:
  explicit RedisCluster(RedisClusterOptions options) : options_(options) {}

  RedisClusterOptions options_;
  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::uint16_t> tls_ports_;
};

}  // namespace sluice::test
