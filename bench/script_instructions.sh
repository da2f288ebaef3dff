#!/usr/bin/env bash
# Instructions redis-server executes per decision, counted by callgrind: a load-independent way to
# compare two builds of the store's scripts and batching (docs/redis-scripts.md, "Later in the
# batches"). For each sluice binary given, in turn (--runs times, interleaved), starts
# redis-server under `valgrind --tool=callgrind` on a free loopback port, runs `sluice bench
# --target redis` against it for a few seconds, and prints the decisions, the script calls, and
# redis-server's instructions per decision: in all, and inside the script calls (EVALSHA, FCALL,
# or the module's command: whichever engine the run used).
#
#   bench/script_instructions.sh [--algorithm A] [--callers N] [--mode async|closed]
#                                [--keys N] [--runs N] [--engines E1,E2…] SLUICE [SLUICE...]
#
# --engines: each binary once per engine (the Redis URL's engine=, script_engine.h): e.g.
# scripts,functions compares EVALSHA with FCALL of the same scripts. Default: the binary's own
# choice (auto).
#
# Under callgrind Redis runs ~50x slower, so a run's batches are those of a saturated Redis:
# about half the callers per call at 10 callers. Use few keys (default 100) so that, at that
# pace, most decisions find their key already written, as they do at full speed with 10 000.
set -euo pipefail

algorithm=fixed_window callers=10 mode=async keys=100 runs=2 engines=auto
binaries=()
while (($#)); do
  case "$1" in
    --algorithm) algorithm="$2"; shift 2 ;;
    --callers) callers="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | cut -c3-; exit 0 ;;
    *) binaries+=("$1"); shift ;;
  esac
done
((${#binaries[@]})) || { echo "usage: $0 [options] SLUICE [SLUICE...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: needs valgrind" >&2; exit 2; }

work="$(mktemp -d /tmp/sluice-instructions.XXXXXX)"
redis_pid=""
cleanup() {
  if [[ -n "$redis_pid" ]]; then kill -TERM "$redis_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

source "$(dirname "$0")/../scripts/lib/free_port.sh"

measure() {  # measure SLUICE ENGINE: prints one line
  local sluice="$1" engine="$2" port profile
  port="$(free_port)"
  profile="$work/callgrind.out"
  valgrind --tool=callgrind --callgrind-out-file="$profile" \
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$work" >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$sluice" bench --target redis --redis "redis://127.0.0.1:$port?engine=$engine" \
    --threads "$callers" \
    --duration 3s --warmup 0s --keys "$keys" --distribution uniform --algorithm "$algorithm" \
    --limit 100 --window 1s --mode "$mode" --no-progress --json >"$work/bench.json"
  local calls
  calls="$(redis-cli -p "$port" info commandstats |
    grep -oiE 'cmdstat_(evalsha|fcall|sluice\.[a-z]+):calls=[0-9]*' |
    cut -d= -f2 | awk '{ sum += $1 } END { print sum + 0 }')"
  kill -TERM "$redis_pid"
  wait "$redis_pid" || true
  redis_pid=""
  python3 - "$work/bench.json" "$profile" "$calls" "$sluice" "$engine" <<'EOF'
import json, re, subprocess, sys
bench, profile, calls, sluice, engine = sys.argv[1:6]
calls = int(calls)
decisions = json.load(open(bench))["points"][0]["decisions"]
total = 0
for line in open(profile):
    if line.startswith(("summary:", "totals:")):
        total = int(line.split()[1])
annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", profile],
                           capture_output=True, text=True).stdout
# The script call's own command: EVALSHA, FCALL, or the module's (its command function).
call = max((int(m.group(1).replace(",", "")) for m in
            re.finditer(r"^\s*([\d,]+) .*(evalShaCommand|fcallCommand|moduleCommand|"
                        r"RedisModuleCommandDispatcher)", annotated, re.M)), default=0)
print(f"{sluice:<40} {engine:<9} decisions {decisions:>6}  calls {calls:>5}  "
      f"per call {decisions / calls:5.1f}  instructions/decision: all {total // decisions:>6}, "
      f"in the call {call // decisions:>6}")
EOF
}

echo "redis-server $(redis-server --version | cut -d' ' -f3) under callgrind; $algorithm," \
  "$callers callers ($mode), $keys keys, 3 s per run"
for ((run = 1; run <= runs; ++run)); do
  for sluice in "${binaries[@]}"; do
    for engine in ${engines//,/ }; do measure "$sluice" "$engine"; done
  done
done
