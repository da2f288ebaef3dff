#!/usr/bin/env bash
# HTTP server benchmark (docs/benchmarks.md, "HTTP server"): wrk against GET /v1/check of
# `sluice serve` on the in-memory store and on Redis, next to nginx serving a small static file,
# all in one run on this machine so the ratios compare like with like. Every server is started
# here on free loopback ports and stopped by PID.
#
#   bench/http_server.sh [DURATION] [CONNECTIONS] [ROUNDS]     (defaults: 10s, 50, 2)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10s}"
connections="${2:-50}"
rounds="${3:-2}"
threads=2

source bench/lib/sluice_bench.sh http-bench
chmod 755 "$dir"  # nginx's workers read the static file

# nginx: a small static file, as many workers as cores.
mkdir -p "$dir/www" "$dir/tmp"
printf '{"allowed":true}\n' >"$dir/www/check.json"
chmod -R a+rX "$dir/www"
nginx_port=$(free_port)
cat >"$dir/nginx.conf" <<CONF
worker_processes $(nproc);
daemon off;
user root;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir/tmp/body; proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi; uwsgi_temp_path $dir/tmp/uwsgi; scgi_temp_path $dir/tmp/scgi;
  server { listen 127.0.0.1:$nginx_port; root $dir/www; }
}
CONF
nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx-error.log" &
pids+=($!)

redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
  --dir "$dir" --logfile "$dir/redis.log" &
pids+=($!)

memory_port=$(free_port)
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$memory_port" \
  --policies sqlite::memory: --policy-file "$dir/bench.yaml" 2>"$dir/memory.log" &
pids+=($!)
redis_sluice_port=$(free_port)
wait_port "$redis_port"
SLUICE_ACCESS_LOG=false "$sluice" serve --listen "127.0.0.1:$redis_sluice_port" \
  --policies sqlite::memory: --policy-file "$dir/bench.yaml" --redis "redis://127.0.0.1:$redis_port" \
  2>"$dir/redis.log" &
pids+=($!)
logged_port=$(free_port)
"$sluice" serve --listen "127.0.0.1:$logged_port" --policies sqlite::memory: \
  --policy-file "$dir/bench.yaml" --access-log stderr \
  2>/dev/null &
pids+=($!)
for port in "$nginx_port" "$memory_port" "$redis_sluice_port" "$logged_port"; do wait_port "$port"; done

echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "nginx:   $(nginx -v 2>&1 | cut -d/ -f2), wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f2)"
echo "wrk:     -t$threads -c$connections -d$duration --latency, $rounds rounds"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (before)"

headers=(-H 'X-Sluice-App: bench' -H 'X-Sluice-Policy: bench.check' -H 'X-Sluice-Key: user-1')
run() {  # name url [headers...]
  local name=$1 url=$2
  shift 2
  wrk -t"$threads" -c"$connections" -d"$duration" --latency "$@" "$url" >"$dir/wrk.txt"
  local rps p50 p99 non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$dir/wrk.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk.txt")
  non2xx=$(awk '/Non-2xx/ {print $5}' "$dir/wrk.txt")
  printf '%-28s %12s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$name" "$rps" "$p50" "$p99" "${non2xx:-0}"
}

for round in $(seq "$rounds"); do
  echo "-- round $round"
  run "nginx static file" "http://127.0.0.1:$nginx_port/check.json"
  run "sluice check, memory" "http://127.0.0.1:$memory_port/v1/check" "${headers[@]}"
  run "sluice check, redis" "http://127.0.0.1:$redis_sluice_port/v1/check" "${headers[@]}"
  run "sluice check, memory+log" "http://127.0.0.1:$logged_port/v1/check" "${headers[@]}"
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (after)"
