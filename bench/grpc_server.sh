#!/usr/bin/env bash
# gRPC front end benchmark (docs/benchmarks.md, "gRPC (Envoy RLS)"): one `sluice serve` with both
# front ends on the in-memory store, one on Redis; in each round, at the same number of callers:
#   - HTTP GET /v1/check loaded by wrk (-t2 -cN), as bench/http_server.sh does;
#   - gRPC ShouldRateLimit loaded by `sluice bench --target grpc --mode async`: N calls in flight
#     on grpc++'s callback API over 2 HTTP/2 connections, as Envoy multiplexes its calls (domain
#     "bench", one descriptor [{key: <subject>}]);
#   - the same with `--mode closed`: N threads, one HTTP/2 connection and one blocking call each;
#   - HTTP POST /v1/acquire loaded by `sluice bench --target http` (N threads, one keep-alive
#     connection each): the same load generator as the closed gRPC row, so client costs compare;
#   - gRPC ShouldRateLimit loaded by h2load (nghttp2-client: C, one thread, 2 connections with
#     N/2 streams each), the same request bytes every time: a load generator as lean as wrk, so
#     "h2load/check" compares the two front ends rather than grpc++'s client against wrk;
#   - the same h2load load on grpc_floor_server, a RateLimitService that answers OK without
#     deciding (row "floor"): what grpc++ itself costs per call, the ceiling of any gRPC row.
# Beside the wrk and h2load rates: the server's CPU per call (µs), its utime + stime from
# /proc/PID/stat over the measured seconds divided by the calls counted in them.
# Servers are started here on free loopback ports and stopped by PID.
#
#   bench/grpc_server.sh [DURATION] [CALLERS] [ROUNDS]     (defaults: 5s, 50, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-5s}"
callers="${2:-50}"
rounds="${3:-3}"

source bench/lib/sluice_bench.sh grpc-bench descriptors
cmake --build build/release --target grpc_floor_server >/dev/null

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
pids+=($!)
start_sluice() {  # http_port grpc_port [serve flags...]
  local http=$1 grpc=$2
  shift 2
  SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$http" --grpc-listen "127.0.0.1:$grpc" \
    --policies sqlite::memory: --policy-file "$dir/bench.yaml" "$@" 2>>"$dir/serve.log" &
  pids+=($!)
}
memory_http=$(free_port) memory_grpc=$(free_port)
start_sluice "$memory_http" "$memory_grpc"
memory_pid=${pids[-1]}
redis_http=$(free_port) redis_grpc=$(free_port)
wait_port "$redis_port"
start_sluice "$redis_http" "$redis_grpc" --redis "redis://127.0.0.1:$redis_port"
redis_sluice_pid=${pids[-1]}
for port in "$memory_http" "$memory_grpc" "$redis_http" "$redis_grpc"; do wait_port "$port"; done

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load:    $callers callers, $duration per row, $rounds rounds; wrk -t2 -c$callers"
echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) (before)"

# Each load generator first runs 1 s unmeasured (wrk: a run of its own; h2load: --warm-up-time),
# as `sluice bench --warmup 1s` does: a server's first second after start (its allocator's
# arenas, grpc++'s per-connection state) is not its steady state.
wrk_run() {  # port duration -> wrk's report
  wrk -t2 -c"$callers" -d"$2" -H 'X-Sluice-App: bench' -H 'X-Sluice-Policy: bench.check' \
    -H 'X-Sluice-Key: user-1' "http://127.0.0.1:$1/v1/check"
}
# utime + stime of process $1 so far, in clock ticks (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_second=$(getconf CLK_TCK)
cpu_per_call() {  # ticks_before ticks_after calls/s -> µs of CPU per call over the measured run
  if [ "${3%.*}" -le 0 ]; then echo 0; return; fi
  printf '%.1f' "$(echo "($2 - $1) * 1000000 / $ticks_per_second / ($3 * ${duration%s})" | bc -l)"
}
wrk_check() {  # port server_pid -> "req/s µs_per_request"
  local before out rate
  wrk_run "$1" 1s >/dev/null
  before=$(cpu_ticks "$2")
  out=$(wrk_run "$1" "$duration")
  rate=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  echo "$rate $(cpu_per_call "$before" "$(cpu_ticks "$2")" "$rate")"
}
# The ShouldRateLimit request as gRPC frames it: a 5-byte prefix (uncompressed, length) and the
# protobuf RateLimitRequest{domain: "bench", descriptors: [{entries: [{key: "key", value:
# "user-1"}]}]}, written byte by byte (field tags 0x0a, 0x12; lengths in the byte after).
printf '\x00\x00\x00\x00\x18\x0a\x05bench\x12\x0f\x0a\x0d\x0a\x03key\x12\x06user-1' >"$dir/grpc-request.bin"
decisions() {  # http_port -> decisions the server has made (its /metrics)
  curl -s "http://127.0.0.1:$1/metrics" | awk '/^sluice_decisions_total/ {n += $2} END {printf "%d", n}'
}
floor_port=$(free_port)
build/release/src/sluice/bench/grpc_floor_server "$floor_port" 2>>"$dir/floor.log" &
pids+=($!)
floor_pid=$!
wait_port "$floor_port"
# h2load counts a gRPC error (HTTP 200 with a grpc-status trailer) as a success, so the server's
# own decision count must have grown by every request h2load says was done.
h2load_grpc() {  # grpc_port http_port server_pid -> "req/s µs_per_call" ("failed" when a
                 # request failed or was not decided)
  local out before answered
  before=$(decisions "$2")
  out=$(h2load_run "$1" "$3")
  answered=$(awk '/^requests:/ {print $8}' <<<"$out")
  if ! grep -q ' 0 failed, 0 errored' <<<"$out" || [ $(( $(decisions "$2") - before )) -lt "${answered:-1}" ]; then
    echo "failed 0"
    return
  fi
  h2load_figures <<<"$out"
}
h2load_figures() {  # h2load_run's output -> "req/s µs_per_call"
  local rate before after
  read -r rate before after < <(awk '/finished in/ {rate = $4}
    /^server cpu ticks/ {before = $4; after = $5} END {printf "%d %d %d", rate, before, after}')
  echo "$rate $(cpu_per_call "$before" "$after" "$rate")"
}
h2load_run() {  # port server_pid -> h2load's report, then "server cpu ticks BEFORE AFTER": the
                # server's CPU from the end of h2load's 1 s warm-up to the end of its run
  local before
  h2load -t1 -c2 -m"$(( (callers + 1) / 2 ))" -D"${duration%s}" --warm-up-time=1s \
    -d "$dir/grpc-request.bin" -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://127.0.0.1:$1/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" \
    >"$dir/h2load.out" 2>&1 &
  sleep 1
  before=$(cpu_ticks "$2")
  wait $!
  cat "$dir/h2load.out"
  echo "server cpu ticks $before $(cpu_ticks "$2")"
}
bench() {  # sluice bench flags... -> decisions/s
  "$sluice" bench --threads "$callers" --duration "$duration" --warmup 1s --keys 1000 \
    --no-progress --json "$@" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["points"][0]["decisions_per_second"]))'
}

# check_us, h2load_us, floor's h2load_us: the server's CPU per call (µs) under that row's load.
printf '%-6s %-7s %12s %12s %12s %12s %12s %12s %12s %12s %9s %9s\n' round store "check(wrk)" \
  "grpc(h2load)" "grpc-async" "grpc-closed" "http-closed" "h2load/check" "async/check" \
  "closed/http" check_us h2load_us
for round in $(seq "$rounds"); do
  for store in memory redis; do
    if [ "$store" = memory ]; then
      http=$memory_http grpc=$memory_grpc pid=$memory_pid
    else
      http=$redis_http grpc=$redis_grpc pid=$redis_sluice_pid
    fi
    read -r check check_us <<<"$(wrk_check "$http" "$pid")"
    [ "$store" = memory ] && check_memory=$check
    read -r hl hl_us <<<"$(h2load_grpc "$grpc" "$http" "$pid")"
    ga=$(bench --target grpc --mode async --url "127.0.0.1:$grpc" --descriptor key)
    gc=$(bench --target grpc --url "127.0.0.1:$grpc" --descriptor key)
    h=$(bench --target http --url "http://127.0.0.1:$http" --policy bench.check)
    printf '%-6s %-7s %12s %12s %12s %12s %12s %12.2f %12.2f %12.2f %9s %9s\n' "$round" "$store" \
      "$check" "$hl" "$ga" "$gc" "$h" "$(echo "${hl/failed/0} / $check" | bc -l)" \
      "$(echo "$ga / $check" | bc -l)" "$(echo "$gc / $h" | bc -l)" "$check_us" "$hl_us"
  done
  read -r floor floor_us <<<"$(h2load_run "$floor_port" "$floor_pid" | h2load_figures)"
  printf '%-6s %-7s %12s %12s %12s %12s %12s %12.2f %12s %12s %9s %9s\n' "$round" floor - "$floor" \
    - - - "$(echo "$floor / $check_memory" | bc -l)" - - - "$floor_us"
done
echo "loadavg: $(cut -d' ' -f1-3 /proc/loadavg) (after)"
