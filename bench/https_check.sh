#!/usr/bin/env bash
# HTTPS benchmark (docs/benchmarks.md, "HTTPS"): wrk against keep-alive GET /v1/check of two
# `sluice serve` processes on the in-memory store, one plain HTTP and one with --tls-cert/--tls-key
# (a P-256 certificate made here), in interleaved rounds of one run; prints each round and the
# median and worst of each. Servers are started on free loopback ports and stopped by PID.
#
#   bench/https_check.sh [DURATION] [CONNECTIONS] [ROUNDS]     (defaults: 10s, 50, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10s}"
connections="${2:-50}"
rounds="${3:-3}"
threads=2

source bench/lib/sluice_bench.sh https-bench
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/key.pem" -out "$dir/cert.pem" 2>/dev/null

plain_port=$(free_port)
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$plain_port" \
  --policies sqlite::memory: --policy-file "$dir/bench.yaml" 2>"$dir/plain.log" &
pids+=($!)
tls_port=$(free_port)
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$tls_port" \
  --policies sqlite::memory: --policy-file "$dir/bench.yaml" \
  --tls-cert "$dir/cert.pem" --tls-key "$dir/key.pem" 2>"$dir/tls.log" &
pids+=($!)
for port in "$plain_port" "$tls_port"; do wait_port "$port"; done

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "openssl: $(openssl version), wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f2)"
echo "wrk:     -t$threads -c$connections -d$duration --latency (keep-alive), $rounds rounds"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before)"

headers=(-H 'X-Sluice-App: bench' -H 'X-Sluice-Policy: bench.check' -H 'X-Sluice-Key: user-1')
run() {  # name url -> prints a row, appends req/s to $dir/name.rps
  local name=$1 url=$2
  wrk -t"$threads" -c"$connections" -d"$duration" --latency "${headers[@]}" "$url" >"$dir/wrk.txt"
  local rps p50 p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$dir/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.txt")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$dir/wrk.txt")
  printf '%-22s %12s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$name" "$rps" "$p50" "$p99" "${non2xx:-0}"
  echo "$rps" >>"$dir/$name.rps"
}

for round in $(seq "$rounds"); do
  echo "-- round $round"
  run "http" "http://127.0.0.1:$plain_port/v1/check"
  run "https" "https://127.0.0.1:$tls_port/v1/check"
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after)"
for name in http https; do
  sort -g "$dir/$name.rps" | awk -v name="$name" '{v[NR]=$1} END {
    printf "%-6s median %.0f req/s, worst %.0f req/s\n", name, v[int((NR+1)/2)], v[1]}'
done
paste "$dir/http.rps" "$dir/https.rps" | awk '{r[NR]=$2/$1} END {
  n=asort(r); printf "https/http per round: median %.2f, worst %.2f\n", r[int((n+1)/2)], r[1]}'
