#!/usr/bin/env bash
# The over-limit cache under abuse (docs/defences.md §1): decisions/s and Redis calls per decision
# through service::Limiter over a real redis-server, cache off and on in the same run (their
# repetitions interleaved at random, so both see the same machine), with 90 % of requests denied.
# And the circuit breaker (§2) while that redis-server is stopped (SIGSTOP; 50 ms store timeout):
# decisions/s and mean latency, breaker off and on. Prints the environment, then the median and
# the worst repetition of each.
#
#   bench/defences.sh [REPETITIONS] [OUT_DIR]     (defaults: 5, $BUILD_DIR/bench-defences)
#
# BUILD_DIR (default build/release) is configured with the release preset and built there.
set -euo pipefail

cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/release}"
repetitions="${1:-5}"
out="${2:-$build/bench-defences}"
mkdir -p "$out"

cmake --preset release -B "$build" >/dev/null
cmake --build "$build" -j 2 --target defences_benchmark >/dev/null

{
  echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src 2>/dev/null || echo ' (+ local changes)')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "redis:   $(redis-server --version | cut -d' ' -f3)"
  echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before)"
} | tee "$out/environment.txt"

"$build/src/sluice/service/defences_benchmark" \
  --benchmark_repetitions="$repetitions" --benchmark_enable_random_interleaving=true \
  --benchmark_min_time=2 \
  --benchmark_out="$out/defences.json" --benchmark_out_format=json >"$out/defences.txt"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after)" | tee -a "$out/environment.txt"

python3 - "$out/defences.json" <<'PY'
import json, statistics, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("run_type") == "iteration"]
print(f"\n{'over-limit cache':<18}{'runs':>5}{'dec/s median':>14}{'dec/s worst':>13}"
      f"{'Redis calls/decision median':>29}{'worst':>8}{'denied':>8}")
rows = {}
for cache in (0, 1):
    mine = [r for r in runs if r["name"].startswith(f"BM_AbusiveLoad/cache:{cache}")]
    rate = [r["items_per_second"] for r in mine]
    calls = [r["store_calls_per_decision"] for r in mine]
    denied = statistics.median(r["denied_share"] for r in mine)
    rows[cache] = (statistics.median(rate), min(rate), statistics.median(calls), max(calls))
    print(f"{'on' if cache else 'off':<18}{len(mine):>5}{rows[cache][0]:>14,.0f}{rows[cache][1]:>13,.0f}"
          f"{rows[cache][2]:>29.3f}{rows[cache][3]:>8.3f}{denied:>8.1%}")
print(f"\ncache on / off: decisions/s x{rows[1][0] / rows[0][0]:.1f} (median), "
      f"x{rows[1][1] / rows[0][1]:.1f} (worst); Redis calls saved: "
      f"{1 - rows[1][2] / rows[0][2]:.1%} (median)")

print(f"\n{'breaker (Redis stopped)':<24}{'runs':>5}{'dec/s median':>14}{'dec/s worst':>13}"
      f"{'mean latency median':>21}{'worst':>12}")
for breaker in (0, 1):
    mine = [r for r in runs if r["name"].startswith(f"BM_StalledRedis/breaker:{breaker}")]
    rate = [r["items_per_second"] for r in mine]
    latency = [r["mean_latency_us"] for r in mine]
    print(f"{'on' if breaker else 'off':<24}{len(mine):>5}{statistics.median(rate):>14,.0f}"
          f"{min(rate):>13,.0f}{statistics.median(latency):>18,.1f} µs{max(latency):>9,.1f} µs")
PY
