#!/usr/bin/env bash
# Soak: `sluice serve` on a real redis-server under steady open-loop load through every
# algorithm, twice over, then checks what a long run must not do (docs/soak.md):
#   - the server's RSS after the second half is within 10 % (+ 4 MiB) of the first half's;
#   - once the load generator has gone, the server holds no more file descriptors than before;
#   - no decision failed or degraded;
#   - every key Sluice wrote to Redis carries an expiry within its policy's horizon, so the
#     database empties by itself (with --wait-expiry: waits for that and checks DBSIZE 0).
#
#   tests/soak/soak_test.sh SLUICE_BINARY [SECONDS_PER_HALF] [RATE] [--wait-expiry]
#   (the test command: 7 s per half at 2 000 decisions/s; docs/soak.md: 300 s at half capacity)
set -euo pipefail
sluice=$1
half=${2:-7}
rate=${3:-2000}
wait_expiry=${4:-}
dir=$(mktemp -d /tmp/sluice-soak-XXXXXX)
source "$(dirname "$0")/../../scripts/lib/loopback.sh"
fail() { echo "soak: FAILED: $*" >&2; exit 1; }

# One policy per algorithm; the longest horizon (state kept after the last request) is 10 s, the
# fixed window's, which goes last so its keys are there to check at the end. (The load
# generator releases the concurrency leases it takes.)
algorithms=(concurrency sliding_window sliding_log token_bucket gcra leaky_bucket fixed_window)
cat >"$dir/policies.yaml" <<'YAML'
- {name: soak.fixed_window, apps: ["*"], limits: [{algorithm: fixed_window, limit: 5, window: 10s}]}
- {name: soak.sliding_window, apps: ["*"], limits: [{algorithm: sliding_window, limit: 5, window: 2s}]}
- {name: soak.sliding_log, apps: ["*"], limits: [{algorithm: sliding_log, limit: 5, window: 2s}]}
- {name: soak.token_bucket, apps: ["*"], limits: [{algorithm: token_bucket, capacity: 5, refill: 5, period: 2s}]}
- {name: soak.gcra, apps: ["*"], limits: [{algorithm: gcra, rate: 5, period: 2s, burst: 4}]}
- {name: soak.leaky_bucket, apps: ["*"], limits: [{algorithm: leaky_bucket, rate: 5, period: 2s, max_delay: 1s}]}
- {name: soak.concurrency, apps: ["*"], limits: [{algorithm: concurrency, limit: 3, lease_ttl: 10s}]}
YAML
horizon_s=10

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  --logfile "$dir/redis.log" &
pids+=($!)
wait_port "$redis_port" || fail "redis-server did not start"
port=$(free_port)
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$port" --policies sqlite::memory: \
  --policy-file "$dir/policies.yaml" --redis "redis://127.0.0.1:$redis_port" 2>"$dir/serve.log" &
serve=$!
pids+=($serve)
wait_port "$port" || fail "sluice serve did not start: $(cat "$dir/serve.log")"

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$serve/status"; }
fds() { ls "/proc/$serve/fd" | wc -l; }

# Each algorithm in turn for a seventh of the half, open loop at `rate`, over 300 subjects (about a third of the decisions denied).
load_half() {
  local per=$((half * 1000 / ${#algorithms[@]}))
  for algorithm in "${algorithms[@]}"; do
    "$sluice" bench --target http --url "http://127.0.0.1:$port" --policy "soak.$algorithm" \
      --app soak --mode open --rate "$rate" --threads 8 --duration "${per}ms" --warmup 0s \
      --keys 300 --json --no-progress >"$dir/bench.json" 2>"$dir/bench.err" ||
      fail "sluice bench on soak.$algorithm: $(cat "$dir/bench.err")"
    python3 - "$dir/bench.json" "$algorithm" <<'PY' || fail "decisions failed on soak.$algorithm"
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
print(f"soak: {sys.argv[2]:15} {p['decisions_per_second']:9.0f}/s  allowed {p['allowed']:6} "
      f"denied {p['denied']:6}  errors {p['errors']}  degraded {p['degraded']}")
sys.exit(0 if p["errors"] == 0 and p["degraded"] == 0 and p["allowed"] + p["denied"] > 0 else 1)
PY
  done
}

fds_before=$(fds)
load_half
rss_first=$(rss_kib)
load_half
rss_second=$(rss_kib)
fds_after=$(fds)
echo "soak: RSS $rss_first KiB after the first half, $rss_second KiB after the second;" \
  "descriptors $fds_before before, $fds_after after"
[ "$rss_second" -le $((rss_first * 110 / 100 + 4096)) ] ||
  fail "RSS grew from $rss_first to $rss_second KiB between the halves"
[ "$fds_after" -le "$fds_before" ] || fail "descriptors grew from $fds_before to $fds_after"

cli() { redis-cli -p "$redis_port" "$@"; }
keys=$(cli DBSIZE)
# Script calls on whichever engine Redis runs them (docs/redis.md, "Engines").
calls=$(cli INFO commandstats | awk -F'[=,]' '/^cmdstat_(evalsha|fcall|sluice)/ {n += $2} END {print n + 0}')
[ "$keys" -gt 0 ] && [ "$calls" -gt 0 ] ||
  fail "$keys keys and $calls script calls in Redis: the load did not reach it"
# Every key has a TTL (-1 would be a key that never expires) no longer than the horizon.
cli --scan | sed 's/^/PTTL /' | cli >"$dir/ttls"
python3 - "$dir/ttls" "$horizon_s" "$keys" <<'PY' || fail "a key without a bounded expiry"
import sys
ttls = [int(line) for line in open(sys.argv[1]) if line.strip()]
horizon_ms = int(sys.argv[2]) * 1000
# -1: a key without an expiry; -2: a key that expired between the scan and PTTL (fine).
bad = [t for t in ttls if t == -1 or t > horizon_ms]
print(f"soak: {len(ttls)} keys (DBSIZE {sys.argv[3]}), longest TTL {max(ttls)} ms, "
      f"{len(bad)} without a bounded expiry")
sys.exit(1 if bad or not ttls else 0)
PY
if [ "$wait_expiry" = "--wait-expiry" ]; then
  sleep $((horizon_s + 2))  # the documented run only: real time, after the load
  keys=$(cli DBSIZE)
  echo "soak: DBSIZE $keys after $((horizon_s + 2)) s without load"
  [ "$keys" -eq 0 ] || fail "$keys keys left after the horizon"
fi
echo "soak: passed"
