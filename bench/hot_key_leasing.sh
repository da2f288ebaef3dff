#!/usr/bin/env bash
# Token leasing on ONE hot key (docs/defences.md, docs/benchmarks.md "Token leasing"): decisions/s
# of `sluice bench --target redis --keys 1` with lease_tokens against the same policy without, on
# the same redis-server in the same run, interleaved. Each side's figure is its best over a sweep
# of load shapes (closed loop with few or many threads, async with many requests in flight), so
# plain decisions get their batching ceiling. Then the over-admission: NODES bench processes at
# once (each a node with its own leases) on one bucket that does not refill; their admissions
# against its capacity (it refills 1 unit a minute: nothing measurable in the run), beside the
# documented bound NODES × lease_tokens.
#
#   bench/hot_key_leasing.sh [ROUNDS] [LEASE_TOKENS] [NODES]   (defaults: 3, 1000, 2)
set -euo pipefail

cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/release}"
rounds="${1:-3}"
k="${2:-1000}"
nodes="${3:-2}"
sluice="$build/src/sluice/cli/sluice"
cmake --build "$build" --target sluice >/dev/null

dir="$(mktemp -d)"
work="$dir"
source scripts/lib/loopback.sh  # pids, cleanup on exit, free_port
port="$(free_port)"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$work/redis.pid" --logfile "$work/redis.log"
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
pids+=("$(cat "$work/redis.pid")")

# A window far above what one key can take in a second: every decision is allowed, so both
# sides measure the decision path, not denials.
for side in plain leased; do
  {
    echo "name: hot.$side"
    echo 'apps: ["*"]'
    [[ "$side" == leased ]] && echo "lease_tokens: $k"
    echo 'limits: [{algorithm: fixed_window, limit: 1000000000, window: 1s}]'
  } >"$work/$side.yaml"
done
cat >"$work/budget.yaml" <<POLICY
name: hot.budget
apps: ["*"]
lease_tokens: $k
limits: [{algorithm: token_bucket, capacity: 3000000, refill: 1, period: 60s}]
POLICY

best() {  # best decisions/s of one side over the load shapes
  local side="$1" best=0 rate
  for shape in "--mode closed --threads 1,8" "--mode closed --threads 64" \
               "--mode async --threads 64,256"; do
    # shellcheck disable=SC2086
    rate="$("$sluice" bench --target redis --redis "redis://127.0.0.1:$port" \
      --policy-file "$work/$side.yaml" --keys 1 $shape --duration 2s --warmup 500ms \
      --no-progress --json | python3 -c \
      "import json,sys; print(max(p['decisions_per_second'] for p in json.load(sys.stdin)['points']))")"
    best="$(python3 -c "print(max($best, $rate))")"
  done
  echo "$best"
}

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src 2>/dev/null || echo ' (+ local changes)')"
echo "machine: $(nproc) cores; redis $(redis-server --version | cut -d' ' -f3); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "lease_tokens: $k"
ratios=()
for round in $(seq "$rounds"); do
  plain="$(best plain)"
  leased="$(best leased)"
  ratio="$(python3 -c "print(f'{$leased / $plain:.2f}')")"
  ratios+=("$ratio")
  printf 'round %d: plain %.0f/s  leased %.0f/s  ratio %s×\n' "$round" "$plain" "$leased" "$ratio"
done
python3 -c "
import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f'ratio: median {statistics.median(r):.2f}x, worst {min(r):.2f}x over {len(r)} rounds')
" "${ratios[@]}"

# Over-admission: NODES processes race for one bucket of 3 000 000 that does not refill.
for i in $(seq "$nodes"); do
  "$sluice" bench --target redis --redis "redis://127.0.0.1:$port" --policy-file \
    "$work/budget.yaml" --keys 1 --key-prefix budget --threads 2 --duration 3s --no-progress \
    --json >"$work/node-$i.json" &
done
wait
python3 - "$k" "$nodes" "$work"/node-*.json <<'COUNT'
import json, sys
k, nodes, files = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
allowed = sum(p["allowed"] for f in files for p in json.load(open(f))["points"])
denied = sum(p["denied"] for f in files for p in json.load(open(f))["points"])
capacity = 3_000_000
print(f"over-admission: {nodes} nodes admitted {allowed} of a bucket of {capacity} "
      f"({denied} denied): over by {max(0, allowed - capacity)}; bound {nodes} x {k} = {nodes * k}")
COUNT
