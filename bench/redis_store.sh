#!/usr/bin/env bash
# Redis store benchmarks (docs/benchmarks.md, "Redis store"): script cost per decision measured
# as redis-server CPU, client overhead next to redis-benchmark, memory per key. One run of
# redis_store_benchmark starts its own redis-server on a free loopback port, so every ratio is
# taken within one run. Prints the environment, then a table of medians and ratios.
#
#   bench/redis_store.sh [REPETITIONS] [OUT_DIR]     (defaults: 5, $BUILD_DIR/bench-redis)
#
# BUILD_DIR (default build/release) is configured with the release preset and built there, so
# several people on one machine can each use their own build directory.
set -euo pipefail

cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/release}"
repetitions="${1:-5}"
out="${2:-$build/bench-redis}"
mkdir -p "$out"

cmake --preset release -B "$build" >/dev/null
cmake --build "$build" --target redis_store_benchmark >/dev/null

{
  echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- src 2>/dev/null || echo ' (+ local changes)')"
  echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "kernel:  $(uname -r)"
  echo "redis:   $(redis-server --version | cut -d' ' -f3)  ($(redis-benchmark --version 2>/dev/null || echo redis-benchmark))"
  echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before)"
} | tee "$out/environment.txt"

"$build/src/sluice/store/redis_store_benchmark" \
  --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
  --benchmark_out="$out/redis_store.json" --benchmark_out_format=json \
  >"$out/redis_store.txt" 2>"$out/summary.txt"  # the median of every repetition (its own table)
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after)" | tee -a "$out/environment.txt"

# Medians of every counter, and the ratios the targets are stated in.
python3 - "$out/redis_store.json" <<'EOF'
import json, sys
# Medians of repeated benchmarks; the memory ones run once (their figures do not vary).
runs = {b["run_name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b.get("aggregate_name", "median") == "median"}
names = {0: "token_bucket", 1: "token_bucket_interval", 2: "gcra", 3: "leaky_bucket",
         4: "fixed_window", 5: "sliding_window", 6: "sliding_log", 7: "sliding_log_100",
         8: "concurrency", 9: "concurrency_100"}
incr = runs["BM_IncrCost/real_time"]
print("\nScript cost: redis-server CPU per decision, medians; ratios to INCR of the same run")
print(f"{'script':<24}{'path':<7}{'cpu µs':>8}{'x INCR':>8}{'main µs':>9}{'x INCR':>8}"
      f"{'exec µs':>9}{'dec/s':>9}")
def row(label, path, r):
    print(f"{label:<24}{path:<7}{r['redis_cpu_us']:>8.2f}{r['redis_cpu_us']/incr['redis_cpu_us']:>8.2f}"
          f"{r['redis_main_thread_us']:>9.2f}"
          f"{r['redis_main_thread_us']/incr['redis_main_thread_us']:>8.2f}"
          f"{r['exec_us']:>9.2f}{r['per_second']:>9.0f}")
row("INCR", "allow", incr)
for path, arg in (("allow", 0), ("deny", 1)):
    row("plain GCRA script", path, runs[f"BM_PlainGcraCost/{arg}/real_time"])
for i, name in names.items():
    for path, arg in (("allow", 0), ("deny", 1)):
        key = f"BM_ScriptCost/{i}/{arg}/real_time"
        if key in runs:
            row(name, path, runs[key])

print("\nClient overhead: gcra acquire, allow path, random subjects (medians)")
print("(client cpu: CPU the calling side spent per decision: this process for RedisStore,")
print(" redis-benchmark's own process for it)")
print(f"{'caller':<40}{'dec/s':>10}{'p50 µs':>9}{'p99 µs':>10}{'client cpu µs':>15}")
client = {}
def client_row(label, r):
    print(f"{label:<40}{r['per_second']:>10.0f}{r['p50_us']:>9.1f}{r['p99_us']:>10.1f}"
          f"{r.get('client_cpu_us', float('nan')):>15.2f}")
for n in (1, 10, 100):
    r = runs[f"BM_SluiceClient/{n}/iterations:1/manual_time"]
    client[f"sluice{n}"] = r
    client_row(f"RedisStore::acquire, {n} threads", r)
for c, p in ((1, 1), (10, 1), (100, 1), (100, 16)):
    r = runs[f"BM_RedisBenchmarkEvalsha/{c}/{p}/iterations:1/manual_time"]
    client[f"rb{c}_{p}"] = r
    raw = " (raw driver)" if r.get("raw_driver", 0) else ""
    client_row(f"redis-benchmark -c {c} -P {p}{raw}", r)
if any(client[k].get("raw_driver", 0) for k in client if k.startswith("rb")):
    print("(raw driver: the store's arguments hold NUL bytes, which redis-benchmark's command line")
    print(" cannot carry; the benchmark's built-in driver does what redis-benchmark does instead)")
ratio = client["sluice100"]["per_second"] / client["rb100_16"]["per_second"]
print(f"100 threads / redis-benchmark -c 100 -P 16: {100 * ratio:.0f} %  (target >= 80 %)")
gap = client["sluice1"]["p50_us"] - client["rb1_1"]["p50_us"]
print(f"1 thread p50 - redis-benchmark -c 1 -P 1 p50: {gap:+.1f} µs  (target <= +20 µs)")

print("\nMemory (MEMORY USAGE of one key; used_memory growth per subject over 20 000)")
for i, name in names.items():
    r = runs.get(f"BM_KeyMemory/{i}/iterations:1/repeats:1")
    if r:
        print(f"{name:<24}{r['memory_usage_bytes']:>6.0f} B{r['used_memory_per_subject']:>9.1f} B")
for kind, label in ((0, "sliding_log"), (1, "concurrency")):
    for n in (10, 128, 129, 512, 513, 1000, 10000):
        r = runs.get(f"BM_FilledKeyMemory/{kind}/{n}/iterations:1/repeats:1")
        if r:
            print(f"{label + ' x ' + str(n):<24}{r['memory_usage_bytes']:>8.0f} B"
                  f"{r['bytes_per_entry']:>8.1f} B/entry")
EOF
