#!/usr/bin/env python3
"""Issue 32 M6 and M8 against a real `sluice serve` on loopback (docs/security/http.md).

Usage: bench/http_abuse.py SLUICE_BINARY [serve flags...]; env BODIES (default 3000 slow
1 MiB bodies) and WAITS (default 9000 parked waits from 127.0.0.1)."""
import json, os, shutil, socket, subprocess, sys, tempfile, time

binary = sys.argv[1]
work = tempfile.mkdtemp()
with open(os.path.join(work, "parked.yaml"), "w") as f:
    f.write("name: parked\napps: ['*']\nlimits:\n  - algorithm: token_bucket\n"
            "    capacity: 1\n    refill: 1\n    period: 60s\n---\nname: other\napps: ['*']\n"
            "limits:\n  - algorithm: token_bucket\n    capacity: 1000\n    refill: 1000\n"
            "    period: 1s\n")
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
port = free_port()
env = dict(os.environ, XDG_DATA_HOME=work)
serve = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--access-log", "false",
                          "--policy-file", os.path.join(work, "parked.yaml")] + sys.argv[2:],
                         stderr=open(os.path.join(work, "log"), "w"), env=env)
def rss_mb():
    for line in open(f"/proc/{serve.pid}/status"):
        if line.startswith("VmRSS:"): return int(line.split()[1]) // 1024
def request(method, path, body=b"", source="127.0.0.1", headers=()):
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    for h in headers: head += h + "\r\n"
    if body: head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    s.sendall(head.encode() + b"\r\n" + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
    s.close()
    return int(data.split(b" ", 2)[1]), data.split(b"\r\n\r\n", 1)[1]
def metric(name):
    _, body = request("GET", "/metrics")
    for line in body.decode().splitlines():
        if line.startswith(name + " "): return float(line.split()[1])
for _ in range(200):
    try: request("GET", "/healthz"); break
    except OSError: time.sleep(0.05)
def timed(fn):
    t = time.monotonic(); r = fn(); return r, (time.monotonic() - t) * 1000

print("== M8: slow large bodies", flush=True)
base = rss_mb()
flood = []
n = int(os.environ.get("BODIES", "3000"))
head = (f"POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {1 << 20}\r\n\r\n").encode()
body = b" " * ((1 << 20) - 1)
refused_sends = 0
for i in range(n):
    s = socket.socket(); s.settimeout(5)
    s.connect(("127.0.0.1", port))
    try:
        s.sendall(head); s.sendall(body)
    except OSError:
        refused_sends += 1
    flood.append(s)
time.sleep(0.5)
health = [timed(lambda: request("GET", "/healthz"))[1] for _ in range(10)]
decided = [timed(lambda: request("POST", "/v1/acquire", json.dumps(
    {"app": "web", "policy": "other", "key": f"k{i}"}).encode(), "127.0.0.2"))
    for i in range(5)]
print(f"bodies sent: {n} (send failed on {refused_sends}); serve RSS {base} -> {rss_mb()} MB")
print(f"buffered_body_bytes {metric('sluice_http_buffered_body_bytes')}, "
      f"body_budget_refusals {metric('sluice_http_body_budget_refusals_total')}")
print(f"/healthz ms: max {max(health):.1f} median {sorted(health)[5]:.1f}; small acquire statuses "
      f"{[r[0][0] for r in decided]} max ms {max(r[1] for r in decided):.1f}")
for s in flood: s.close()
flood = []
time.sleep(1)

print("== M6: one client parks waits", flush=True)
parkers = []
waits = int(os.environ.get("WAITS", "9000"))
park = json.dumps({"app": "x", "policy": "parked", "key": "a", "wait_ms": 60000}).encode()
request("POST", "/v1/acquire", park)  # takes the one token
for i in range(waits):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(park)}\r\n\r\n".encode() + park)
    parkers.append(s)
time.sleep(1)
pending, overloaded = metric("sluice_decisions_pending"), metric("sluice_decisions_overloaded_total")
statuses = {}
worst = 0
for i in range(100):
    (status, _), ms = timed(lambda: request("POST", "/v1/acquire", json.dumps(
        {"app": "web", "policy": "other", "key": f"victim{i % 40}"}).encode(), "127.0.0.2"))
    statuses[status] = statuses.get(status, 0) + 1
    worst = max(worst, ms)
print(f"attacker connections {waits}: pending {pending}, overloaded {overloaded}")
print(f"other client's 100 acquires on policy other: {statuses}, slowest {worst:.1f} ms")
for s in parkers: s.close()
serve.terminate(); serve.wait()
shutil.rmtree(work, ignore_errors=True)
