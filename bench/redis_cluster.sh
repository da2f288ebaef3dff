#!/usr/bin/env bash
# Redis Cluster benchmark (docs/benchmarks.md, "Redis Cluster"; docs/redis.md, "Sizing a
# cluster"): `sluice bench --mode async` with CALLERS requests in flight against
#   - one standalone Redis (one master), and
#   - a Redis Cluster of three masters (no replicas) on this same machine,
# interleaved for ROUNDS rounds, uniform over KEYS subjects (fixed window, 100/s each). Besides
# decisions/s, each row gives the Redis CPU per decision: per master, the CPU it used (INFO cpu,
# user + sys) over the decisions its slots received (the run's decisions times the share of the
# 16384 slots it serves, the keys being uniform), and the sum over masters.
# Servers are started here on free loopback ports and stopped by PID.
#
#   bench/redis_cluster.sh [DURATION] [CALLERS] [ROUNDS] [KEYS]   (defaults: 5s, 100, 3, 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5s}"
callers="${2:-100}"
rounds="${3:-3}"
keys="${4:-100000}"

cmake --preset release >/dev/null
cmake --build build/release --target sluice >/dev/null
sluice=build/release/src/sluice/cli/sluice

dir=$(mktemp -d /tmp/sluice-cluster-bench-XXXXXX)
source scripts/lib/loopback.sh

start_redis() {  # port [redis-server flags...]
  local port=$1
  shift
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir/$port" \
    --logfile "$dir/$port/redis.log" "$@" &
  pids+=($!)
}
single=$(free_port)
start_redis "$single"
masters=()
for _ in 1 2 3; do
  port=$(free_port)
  # The cluster bus on its own free port (by default port + 10000, maybe beyond 65535).
  start_redis "$port" --cluster-port "$(free_port)" --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-require-full-coverage no
  masters+=("$port")
done
for port in "$single" "${masters[@]}"; do wait_port "$port"; done
redis-cli --cluster create "${masters[@]/#/127.0.0.1:}" --cluster-yes >/dev/null
for _ in $(seq 100); do
  ok=0
  for port in "${masters[@]}"; do
    redis-cli -p "$port" CLUSTER INFO | grep -q cluster_state:ok && ok=$((ok + 1))
  done
  [ "$ok" = 3 ] && break
  sleep 0.1
done
cluster_url="redis+cluster://127.0.0.1:${masters[0]}"

cpu_seconds() {  # port -> used_cpu_user + used_cpu_sys
  redis-cli -p "$1" INFO cpu | tr -d '\r' |
    awk -F: '/^used_cpu_(user|sys):/ {s += $2} END {printf "%.6f\n", s}'
}
slots_of() {  # port -> slots it serves
  redis-cli -p "$1" CLUSTER NODES | awk '/myself/ {
    n = 0; for (i = 9; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) }
    print n }'
}
run() {  # url ports... -> "decisions/s decisions_per_call cpu_us_per_decision(total) per-master..."
  local url=$1
  shift
  local before=() after=() share=()
  for port in "$@"; do before+=("$(cpu_seconds "$port")"); done
  local json
  json=$("$sluice" bench --redis "$url" --mode async --threads "$callers" --duration "$duration" \
    --warmup 1s --keys "$keys" --no-progress --json)
  for port in "$@"; do after+=("$(cpu_seconds "$port")"); done
  for port in "$@"; do
    if [ $# -eq 1 ]; then share+=(16384); else share+=("$(slots_of "$port")"); fi
  done
  BEFORE="${before[*]}" AFTER="${after[*]}" SHARE="${share[*]}" python3 -c '
import json, os, sys
point = json.loads(sys.stdin.read())["points"][0]
# The warm-up second is not in the decisions but is in the CPU figure: scale by the ratio.
decisions = point["decisions"] * (point["seconds"] + 1.0) / point["seconds"]
before = [float(x) for x in os.environ["BEFORE"].split()]
after = [float(x) for x in os.environ["AFTER"].split()]
share = [int(x) for x in os.environ["SHARE"].split()]
per_master = [(a - b) * 1e6 / (decisions * s / 16384) for a, b, s in zip(after, before, share)]
total = sum(a - b for a, b in zip(after, before)) * 1e6 / decisions
print(round(point["decisions_per_second"]), round(point["decisions_per_call"], 2),
      round(total, 2), " ".join(f"{x:.2f}" for x in per_master))' <<<"$json"
}

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $callers async callers, $keys uniform keys, $duration per row, $rounds rounds"
echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) (before)"
printf '%-6s %-10s %12s %10s %14s  %s\n' round target "decisions/s" "per call" \
  "redis us/dec" "per master us/dec"
for round in $(seq "$rounds"); do
  read -r rate per_call total masters_cpu <<<"$(run "redis://127.0.0.1:$single" "$single")"
  printf '%-6s %-10s %12s %10s %14s  %s\n' "$round" "1 master" "$rate" "$per_call" "$total" \
    "$masters_cpu"
  read -r rate per_call total m1 m2 m3 <<<"$(run "$cluster_url" "${masters[@]}")"
  printf '%-6s %-10s %12s %10s %14s  %s\n' "$round" "3 masters" "$rate" "$per_call" "$total" \
    "$m1 $m2 $m3"
done
echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) (after)"
