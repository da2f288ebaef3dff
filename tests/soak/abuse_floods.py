#!/usr/bin/env python3
"""Every flood of issue 32 at a modest rate, together, against one `sluice serve`.

The floods only generate load: what they must not achieve (RSS growing, normal traffic slowed or
refused) is checked by abuse_soak.sh, which runs this beside `sluice bench`. Each flood is a
thread that keeps its own pressure up until the deadline and counts what it sent and how the
server answered, so the run's report says what the server stood up to.

  abuse_floods.py --http PORT --grpc PORT --seconds N --mallory-password P [--scale F]

Standard library only; HTTP/1.1 and HTTP/2 frames are written by hand so that each flood can be
exactly as rude as an attacker is (never finishing a body, a header block or a stream).
"""
import argparse
import collections
import json
import os
import socket
import struct
import threading
import time

counts = collections.Counter()
counts_lock = threading.Lock()


def count(name, n=1):
    with counts_lock:
        counts[name] += n


# The attacker's own address: the server can tell it from normal traffic's 127.0.0.1, as it could
# tell two hosts apart.
ATTACKER = "127.0.0.2"


def connect(port, timeout=2.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(ATTACKER, 0))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def http_call(port, method, path, body=b"", headers=None, timeout=5.0):
    """One HTTP/1.1 request on its own connection; returns (status, headers, body) or None."""
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close",
            f"Content-Length: {len(body)}"]
    for key, value in (headers or {}).items():
        head.append(f"{key}: {value}")
    try:
        with connect(port, timeout) as s:
            s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return None
    header_text, _, rest = data.partition(b"\r\n\r\n")
    lines = header_text.decode("latin-1").split("\r\n")
    if not lines or len(lines[0].split()) < 2:
        return None
    fields = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        fields[key.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, rest


def json_call(port, method, path, payload, cookie=None, csrf=None):
    headers = {"Content-Type": "application/json"}
    if cookie:
        headers["Cookie"] = cookie
    if csrf:
        headers["X-CSRF-Token"] = csrf
    answer = http_call(port, method, path, json.dumps(payload).encode(), headers)
    if answer is None:
        count(f"{path.split('/')[2]}.no_answer")
    else:
        count(f"{path.split('/')[2]}.{answer[0]}")
    return answer


def paced(rate, deadline):
    """Yields at `rate` per second until the deadline."""
    interval = 1.0 / rate
    next_at = time.monotonic()
    while time.monotonic() < deadline:
        yield
        next_at += interval
        pause = next_at - time.monotonic()
        if pause > 0:
            time.sleep(pause)


# --- HTTP/2 (the gRPC port) -------------------------------------------------------------------

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS, CONTINUATION, SETTINGS, DATA = 0x1, 0x9, 0x4, 0x0
END_STREAM, END_HEADERS = 0x1, 0x4


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def literal(name, value):
    """An HPACK literal header field without indexing, new name (RFC 7541 §6.2.2)."""
    def string(text):
        raw = text.encode()
        assert len(raw) < 127
        return bytes([len(raw)]) + raw
    return b"\x00" + string(name) + string(value)


def grpc_request_headers(path):
    return (literal(":method", "POST") + literal(":scheme", "http") + literal(":path", path) +
            literal(":authority", "127.0.0.1") + literal("content-type", "application/grpc") +
            literal("te", "trailers"))


def h2_connect(port):
    s = connect(port)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0, b""))
    return s


def grpc_idle(port, deadline, scale):
    """H1: idle connections held open, more than any sane cap, reopened as the server closes them."""
    held = []
    target = int(2000 * scale)
    while time.monotonic() < deadline:
        while len(held) < target and time.monotonic() < deadline:
            try:
                held.append(connect(port))
                count("grpc_idle.opened")
            except OSError:
                count("grpc_idle.refused")
                break
        alive = []
        for s in held:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    count("grpc_idle.closed_by_server")
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                count("grpc_idle.closed_by_server")
                s.close()
                continue
            alive.append(s)
        held = alive
        time.sleep(0.5)
    for s in held:
        s.close()


def grpc_continuation(port, deadline, scale):
    """H2: a header block that never ends, CONTINUATION after CONTINUATION, at ~1 MiB/s."""
    block = literal("x-pad", "a" * 100) * 150  # 16 200 bytes: under the 16 384 frame size
    for _ in paced(64 * scale, deadline):
        try:
            s = h2_connect(port)
            s.sendall(frame(HEADERS, 0, 1, grpc_request_headers(
                "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")))
            count("grpc_continuation.connections")
            for _ in paced(64 * scale, deadline):
                s.sendall(frame(CONTINUATION, 0, 1, block))
                count("grpc_continuation.frames")
        except OSError:
            count("grpc_continuation.closed_by_server")


def grpc_half_open(port, deadline, scale):
    """M10: streams opened (headers done) whose request never comes, 200 per second."""
    for _ in paced(max(1, 2 * scale), deadline):
        try:
            s = h2_connect(port)
            count("grpc_half_open.connections")
            stream = 1
            for _ in paced(100 * scale, min(deadline, time.monotonic() + 10)):
                s.sendall(frame(HEADERS, END_HEADERS, stream, grpc_request_headers(
                    "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")))
                stream += 2
                count("grpc_half_open.streams")
            s.close()
        except OSError:
            count("grpc_half_open.closed_by_server")


def varint(n):
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def proto_field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def grpc_many_descriptors(port, deadline, scale):
    """L5: one call with 20 000 descriptors, a few times a second."""
    entry = proto_field(1, proto_field(1, b"key") + proto_field(2, b"v"))
    message = proto_field(1, b"abuse") + proto_field(2, entry) * 20000
    body = b"\x00" + struct.pack(">I", len(message)) + message
    for _ in paced(2 * scale, deadline):
        try:
            s = h2_connect(port)
            s.sendall(frame(HEADERS, END_HEADERS, 1, grpc_request_headers(
                "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit")))
            for offset in range(0, len(body), 16384):
                last = offset + 16384 >= len(body)
                s.sendall(frame(DATA, END_STREAM if last else 0, 1, body[offset:offset + 16384]))
            s.settimeout(2)
            s.recv(65536)
            s.close()
            count("grpc_many_descriptors.calls")
        except OSError:
            count("grpc_many_descriptors.closed_by_server")


# --- HTTP (the decision and admin port) ---------------------------------------------------------

def reservations(port, deadline, scale):
    """H3: reservations never settled, each as long-lived as the server allows, on ever new
    subjects (a reserve of cost 0, the issue's first shape, is refused since: it would be a peek)."""
    n = 0
    for _ in paced(300 * scale, deadline):
        n += 1
        json_call(port, "POST", "/v1/reserve", {"app": "abuser", "policy": "abuse.quota",
                                                "key": f"r{n}", "cost": 1, "ttl_ms": 3600 * 1000})


def junk_subjects(port, deadline, scale):
    """M5: ever new 900-byte subjects, to fill the memory store for everyone."""
    n = 0
    for _ in paced(300 * scale, deadline):
        n += 1
        json_call(port, "POST", "/v1/acquire", {"app": "abuser", "policy": "abuse.api",
                                                "key": f"{n:08d}" + "j" * 892})


def penalties(port, deadline, scale):
    """M4: denied acquires on ever new subjects of a policy with a penalty box."""
    n = 0
    for _ in paced(200 * scale, deadline):
        n += 1
        json_call(port, "POST", "/v1/acquire", {"app": "abuser", "policy": "abuse.penalty",
                                                "key": f"p{n}", "cost": 2})


def parked_waits(port, deadline, scale):
    """M6: connections that each park a wait of up to 20 s on an exhausted subject, asking again
    once a second when refused."""
    def one():
        for _ in paced(1, deadline):
            json_call(port, "POST", "/v1/acquire", {"app": "abuser", "policy": "abuse.slow",
                                                    "key": "hot", "wait_ms": 20000})
    threads = [threading.Thread(target=one, daemon=True) for _ in range(int(400 * scale))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def slow_bodies(port, deadline, scale):
    """M8: bodies announced at 1 MiB - 1 and sent a few bytes a second, up to 300 at once; those
    the server closes are replaced, 40 a second at most."""
    held = []
    target = int(300 * scale)
    while time.monotonic() < deadline:
        for _ in range(min(target - len(held), int(40 * scale))):
            try:
                s = connect(port)
                s.sendall(b"POST /v1/acquire HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                          b"\r\nContent-Length: 1048575\r\n\r\n" + b" " * 60000)
                held.append(s)
                count("slow_bodies.opened")
            except OSError:
                count("slow_bodies.refused")
                break
        alive = []
        for s in held:
            try:
                s.sendall(b" " * 64)
                alive.append(s)
            except OSError:
                count("slow_bodies.closed_by_server")
                s.close()
        held = alive
        time.sleep(1)
    for s in held:
        s.close()


def sign_in(port, user, password):
    answer = http_call(port, "POST", "/v1/session",
                       json.dumps({"user": user, "password": password}).encode(),
                       {"Content-Type": "application/json"})
    if answer is None or answer[0] != 200:
        return None, None
    cookie = answer[1].get("set-cookie", "").split(";")[0]
    return cookie, json.loads(answer[2]).get("csrf_token")


def wrong_passwords(port, deadline, scale, user, password):
    """M7: own-password changes with a wrong current password, each one a KDF run."""
    cookie, csrf = sign_in(port, user, password)
    for _ in paced(20 * scale, deadline):
        json_call(port, "PUT", f"/v1/users/{user}/password",
                  {"password": "whatever-new-password", "current_password": "wrong"},
                  cookie, csrf)


def big_tokens(port, deadline, scale, user, password):
    """M9: tokens with 1 MiB descriptions."""
    cookie, csrf = sign_in(port, user, password)
    description = "d" * (1024 * 1024)
    for _ in paced(2 * scale, deadline):
        json_call(port, "POST", "/v1/tokens", {"description": description}, cookie, csrf)


def logins(port, deadline, scale, user, password):
    """L7: sessions opened as fast as a modest attacker likes."""
    for _ in paced(5 * scale, deadline):
        count("logins." + ("200" if sign_in(port, user, password)[0] else "refused"))


def cross_site(port, deadline, scale):
    """L2: the simple request a victim's browser sends for a hostile page."""
    for _ in paced(20 * scale, deadline):
        answer = http_call(port, "POST", "/v1/acquire",
                           b'{"app":"normal","policy":"normal.api","key":"victim","cost":1000}',
                           {"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"})
        count(f"cross_site.{answer[0] if answer else 'no_answer'}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, required=True)
    parser.add_argument("--grpc", type=int, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--user", default="mallory")
    parser.add_argument("--password", required=True)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="", help="comma-separated flood names (default: all)")
    args = parser.parse_args()
    deadline = time.monotonic() + args.seconds
    s = args.scale
    floods = [
        (grpc_idle, (args.grpc, deadline, s)),
        (grpc_continuation, (args.grpc, deadline, s)),
        (grpc_half_open, (args.grpc, deadline, s)),
        (grpc_many_descriptors, (args.grpc, deadline, s)),
        (reservations, (args.http, deadline, s)),
        (junk_subjects, (args.http, deadline, s)),
        (penalties, (args.http, deadline, s)),
        (parked_waits, (args.http, deadline, s)),
        (slow_bodies, (args.http, deadline, s)),
        (wrong_passwords, (args.http, deadline, s, args.user, args.password)),
        (big_tokens, (args.http, deadline, s, args.user, args.password)),
        (logins, (args.http, deadline, s, args.user, args.password)),
        (cross_site, (args.http, deadline, s)),
    ]
    if args.only:
        floods = [(f, a) for f, a in floods if f.__name__ in args.only.split(",")]
    threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in floods]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()) + 15)
    print(json.dumps(dict(sorted(counts.items()))))
    os._exit(0)  # daemon threads parked in a call must not hold the exit


if __name__ == "__main__":
    main()
