#!/usr/bin/env bash
# Decisions per Redis CPU-second by engine (docs/redis.md, "Engines"; docs/benchmarks.md, "Redis
# engines end to end"): one redis-server with the sluice module loaded, and `sluice bench --target
# redis --mode async` against it through each engine in turn (the Redis URL's engine=), rounds
# interleaved. For each run: decisions/s, and the CPU time (user + system, /proc/PID/stat) that
# redis-server spent, divided into the decisions. On a shared 2-core machine the rate moves with
# the neighbours; Redis's CPU per decision is what one decision costs the Redis a team pays for.
#
#   bench/redis_engines.sh [DURATION] [CALLERS] [ROUNDS] [ALGORITHM] [ENGINES]
#   (defaults: 5s, 100, 3, gcra, "scripts functions module")
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5s}"
callers="${2:-100}"
rounds="${3:-3}"
algorithm="${4:-gcra}"
engines="${5:-scripts functions module}"

cmake --preset release >/dev/null
cmake --build build/release --target sluice sluice_redis_module >/dev/null
sluice=build/release/src/sluice/cli/sluice
module=$(pwd)/build/release/src/sluice/redis_module/sluice.so
dir=$(mktemp -d /tmp/sluice-redis-engines-XXXXXX)
source scripts/lib/loopback.sh

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" --loadmodule "$module" &
redis_pid=$!
pids+=("$redis_pid")
wait_port "$redis_port"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)

echo "redis-server $(redis-server --version | cut -d' ' -f3), module $module"
echo "sluice bench --target redis --mode async --threads $callers --duration $duration," \
  "$algorithm, 10 000 keys, $rounds rounds"
printf '%-10s %5s %12s %16s %22s\n' engine round decisions/s "redis CPU (s)" "decisions/redis CPU-s"
for ((round = 1; round <= rounds; ++round)); do
  for engine in $engines; do
    redis-cli -p "$redis_port" FLUSHALL >/dev/null
    before=$(cpu_ticks "$redis_pid")
    "$sluice" bench --target redis --redis "redis://127.0.0.1:$redis_port?engine=$engine" \
      --mode async --threads "$callers" --duration "$duration" --warmup 0s --keys 10000 \
      --algorithm "$algorithm" --limit 100 --window 1s --no-progress --json >"$dir/bench.json"
    after=$(cpu_ticks "$redis_pid")
    python3 - "$dir/bench.json" "$engine" "$round" "$before" "$after" "$ticks_per_second" <<'EOF'
import json, sys
bench, engine, round_, before, after, hz = sys.argv[1:7]
point = json.load(open(bench))["points"][0]
seconds = (int(after) - int(before)) / int(hz)
rate = point["decisions_per_second"]
per_cpu = point["decisions"] / seconds if seconds > 0 else float("inf")
print(f"{engine:<10} {round_:>5} {rate:>12.0f} {seconds:>16.2f} {per_cpu:>22.0f}")
EOF
  done
done
