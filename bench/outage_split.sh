#!/usr/bin/env bash
# Budget-preserving outage mode (docs/defences.md): N `sluice serve` processes on one
# redis-server; Redis is stopped, then decisions are driven through the servers, spread evenly
# and then skewed (all on one server), for policies that differ only in on_store_failure:
# split, fail_open and local. Prints admissions against the limit, per mode and traffic shape;
# then restarts Redis and checks that decisions are shared again.
#
#   bench/outage_split.sh [NODES] [LIMIT] [LOCAL_FRACTION] [DOWN]   (defaults: 4, 1000, 1/NODES, 0)
#
# LOCAL_FRACTION is the --local-fraction every server gets (`local`'s fixed share): 1/NODES is
# `local` sized right; 0.5 is `local` sized for 2 servers while NODES run (after a scale-out).
# DOWN servers are stopped (SIGTERM: they leave the heartbeat set) before the outage, as after a
# scale-in or a crash one TTL ago: split then divides by the servers still running, local by the
# fraction it was given. Each shape sends 2 × LIMIT decisions for a fresh subject to the running
# servers, so the limit is always reachable. A third shape, "used": LIMIT / 2 decisions are
# admitted while Redis is up (the servers taking turns, 10 at a time), then the outage's even
# traffic; its "admitted" counts both, so its over-admission is what the window in which the
# outage begins grants beyond the limit.
set -euo pipefail

cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build/release}"
nodes="${1:-4}"
limit="${2:-1000}"
fraction="${3:-$(python3 -c "print(1/$nodes)")}"
down="${4:-0}"
sluice="$build/src/sluice/cli/sluice"
cmake --build "$build" --target sluice >/dev/null

dir="$(mktemp -d)"
work="$dir"
source scripts/lib/loopback.sh  # pids, cleanup on exit, free_port

redis_port="$(free_port)"
start_redis() {
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$work/redis.pid" --logfile "$work/redis.log"
  for _ in $(seq 100); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  redis_pid="$(cat "$work/redis.pid")"
  pids+=("$redis_pid")  # stopped on exit with the servers (a restart adds the new one)
}
start_redis

for mode in split fail_open local; do
  cat >>"$work/policies.yaml" <<POLICY
---
name: outage.$mode
apps: ["*"]
on_store_failure: $mode
limits:
  - {algorithm: fixed_window, limit: $limit, window: 1h}
POLICY
done

ports=()
for i in $(seq 0 $((nodes - 1))); do
  port="$(free_port)"
  ports+=("$port")
  "$sluice" serve --listen "127.0.0.1:$port" --redis "redis://127.0.0.1:$redis_port" \
    --policies sqlite::memory: --policy-file "$work/policies.yaml" --node-id "node-$i" \
    --local-fraction "$fraction" --redis-timeout 200ms --access-log false \
    >"$work/serve-$i.log" 2>&1 &
  pids+=("$!")
done
# Every server up and seeing every node (heartbeats beat every ttl/3 = 1 s).
for port in "${ports[@]}"; do
  for _ in $(seq 200); do
    live="$(curl -s "127.0.0.1:$port/metrics" | awk '/^sluice_live_nodes /{print $2}' || true)"
    [[ "$live" == "$nodes" ]] && break
    sleep 0.05
  done
  [[ "$live" == "$nodes" ]] || { echo "server on $port sees ${live:-no} live nodes"; exit 1; }
done

for i in $(seq 1 "$down"); do
  kill "${pids[$((nodes - i))]}"
  wait "${pids[$((nodes - i))]}" 2>/dev/null || true
  unset "ports[$((nodes - i))]"
done
running=$((nodes - down))
for _ in $(seq 200); do
  live="$(curl -s "127.0.0.1:${ports[0]}/metrics" | awk '/^sluice_live_nodes /{print $2}' || true)"
  [[ "$live" == "$running" ]] && break
  sleep 0.05
done
[[ "$live" == "$running" ]] || { echo "after stopping $down: ${live:-no} live nodes"; exit 1; }

echo "nodes: $nodes started, $running running   limit: $limit per window   local_fraction: $fraction   redis: $(redis-server --version | cut -d' ' -f3)"
cat >"$work/send.py" <<'SEND'
import json, urllib.request

def send(port, policy, key, count):
    allowed = degraded = 0
    while count > 0:
        n = min(count, 200)
        body = json.dumps({"requests": [{"app": "bench", "policy": policy, "key": key}] * n})
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/acquire/batch",
                                         data=body.encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            for d in json.load(response)["decisions"]:
                allowed += d.get("allowed", False)
                degraded += d.get("degraded", False)
        count -= n
    return allowed, degraded
SEND

# "used": half the limit admitted before the outage, the servers taking turns.
PYTHONPATH="$work" python3 - "$limit" "${ports[@]}" >"$work/used.txt" <<'USE'
import sys
from send import send
limit, ports = int(sys.argv[1]), sys.argv[2:]
for mode in ["split", "fail_open", "local"]:
    allowed = 0
    for turn in range(limit // 2 // 10):
        a, d = send(ports[turn % len(ports)], f"outage.{mode}", "used-client", 10)
        assert d == 0, "degraded while redis is up"
        allowed += a
    print(mode, allowed)
USE

kill "$redis_pid"
for _ in $(seq 100); do kill -0 "$redis_pid" 2>/dev/null || break; sleep 0.05; done
redis_pid=""

PYTHONPATH="$work" python3 - "$limit" "$work/used.txt" "${ports[@]}" <<'DRIVE'
import sys
from send import send
limit, used_file, ports = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
before = {line.split()[0]: int(line.split()[1]) for line in open(used_file)}

total = 2 * limit
shapes = {
    "even": [total // len(ports)] * len(ports),
    "skewed": [total] + [0] * (len(ports) - 1),
    "used": [total // len(ports)] * len(ports),
}
print(f"{'mode':10} {'traffic':8} {'sent':>6} {'admitted':>9} {'limit':>6} {'over':>6} {'over %':>7}")
for mode in ["split", "fail_open", "local"]:
    for shape, counts in shapes.items():
        allowed = degraded = 0
        for port, count in zip(ports, counts):
            a, d = send(port, f"outage.{mode}", f"{shape}-client", count)
            allowed += a
            degraded += d
        assert degraded == sum(counts), f"{mode} {shape}: only {degraded} degraded"
        if shape == "used":
            allowed += before[mode]
        over = allowed - limit
        print(f"{mode:10} {shape:8} {sum(counts):6} {allowed:9} {limit:6} {over:6} {100 * over / limit:6.1f}%")
DRIVE

start_redis
python3 - "${ports[0]}" <<'BACK'
import json, sys, time, urllib.request
port = sys.argv[1]
for _ in range(100):
    body = json.dumps({"app": "bench", "policy": "outage.split", "key": "after"}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/acquire", data=body,
                                     method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        if not json.load(response).get("degraded"):
            print("redis back: decisions shared again (not degraded)")
            sys.exit(0)
    time.sleep(0.1)
sys.exit("redis back, but decisions are still degraded")
BACK
