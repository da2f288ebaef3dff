#!/usr/bin/env bash
# CPU per decision (docs/benchmarks.md, "Restructuring (issue 33)"): wrk against GET /v1/check of
# `sluice serve` on Redis, and the CPU time (user + system, from /proc/PID/stat) the server and
# redis-server spent during the run, divided by the decisions answered. Wall-clock throughput on a
# shared 2-core machine moves with its neighbours; CPU per decision says what one decision costs.
#
#   bench/cpu_per_decision.sh [DURATION] [CONNECTIONS] [ROUNDS] [SLUICE_BINARY]
#   (defaults: 5s, 50, 3, this tree's release build; pass another tree's binary to compare)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5s}"
connections="${2:-50}"
rounds="${3:-3}"
other="${4:-}"

source bench/lib/sluice_bench.sh cpu-bench
[ -n "$other" ] && sluice=$other

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
redis_pid=$!
pids+=("$redis_pid")
sluice_port=$(free_port)
wait_port "$redis_port"
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$sluice_port" \
  --policies sqlite::memory: --policy-file "$dir/bench.yaml" --redis "redis://127.0.0.1:$redis_port" \
  2>"$dir/sluice.log" &
sluice_pid=$!
pids+=("$sluice_pid")
wait_port "$sluice_port"

# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)

echo "binary:  $sluice"
echo "wrk:     -t2 -c$connections -d$duration, $rounds rounds, GET /v1/check on Redis"
url="http://127.0.0.1:$sluice_port/v1/check"
headers=(-H 'X-Sluice-App: bench' -H 'X-Sluice-Policy: bench.check' -H 'X-Sluice-Key: user-1')
for round in $(seq 1 "$rounds"); do
  sluice_before=$(cpu_ticks "$sluice_pid")
  redis_before=$(cpu_ticks "$redis_pid")
  wrk -t2 -c"$connections" -d"$duration" "${headers[@]}" "$url" >"$dir/wrk.txt"
  sluice_after=$(cpu_ticks "$sluice_pid")
  redis_after=$(cpu_ticks "$redis_pid")
  requests=$(awk '/requests in/ {print $1}' "$dir/wrk.txt")
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.txt")
  awk -v r="$round" -v n="$requests" -v rps="$rps" -v hz="$ticks_per_second" \
    -v s=$((sluice_after - sluice_before)) -v d=$((redis_after - redis_before)) 'BEGIN {
      printf "round %d: %10.0f decisions/s   sluice %6.2f us CPU/decision   redis %5.2f us\n",
             r, rps, s / hz * 1e6 / n, d / hz * 1e6 / n }'
done
