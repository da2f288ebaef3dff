#!/usr/bin/env bash
# The gap after a Redis Cluster master is killed (docs/redis.md, "Failover"): how long decisions
# on its slots fail (and follow the policy's failure mode) until its replica is promoted, against
# cluster-node-timeout. Runs the failover integration test (3 masters + 3 replicas, SIGKILL of a
# master under load from 6 threads) RUNS times per timeout and prints each gap.
#
#   bench/cluster_failover.sh [RUNS] [TIMEOUTS_MS...]     (defaults: 3, 500 1000 2000)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-3}"
shift || true
timeouts=("${@:-500 1000 2000}")
[ $# -eq 0 ] && timeouts=(500 1000 2000)

cmake --preset release >/dev/null
cmake --build build/release --target redis_cluster_test >/dev/null
test_binary=build/release/src/sluice/store/redis_cluster_test

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
for timeout in "${timeouts[@]}"; do
  for run in $(seq "$runs"); do
    SLUICE_CLUSTER_NODE_TIMEOUT_MS=$timeout "$test_binary" \
      --gtest_filter='RedisClusterFailoverTest.*' 2>&1 | grep -E '^failover gap|FAILED' ||
      echo "run $run at $timeout ms: no gap printed"
  done
done
