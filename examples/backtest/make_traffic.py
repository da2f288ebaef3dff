#!/usr/bin/env python3
"""Writes 10 minutes of synthetic nginx-style JSON access-log lines (docs/backtesting.md):
2 000 clients at 0.02 to 1.5 requests per second, and 5 scrapers at 8 per second. Deterministic."""
import datetime, gzip, heapq, random, sys

random.seed(36)
START = 1_795_000_000_000_000  # 2026-11-18T11:06:40Z, in µs
END = START + 600_000_000
clients = [(f"10.0.{i // 256}.{i % 256}", random.uniform(0.02, 1.5)) for i in range(2000)]
clients += [(f"192.0.2.{i}", 8.0) for i in range(5)]
heap = [(START + int(random.expovariate(rate) * 1e6), ip, rate) for ip, rate in clients]
heapq.heapify(heap)
with gzip.open(sys.argv[1], "wt") as out:
    while heap:
        t, ip, rate = heapq.heappop(heap)
        if t >= END:
            continue
        secs, micros = divmod(t, 1_000_000)
        stamp = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        out.write(f'{{"ts": "{stamp}.{micros:06d}Z", "client": {{"ip": "{ip}"}}, "status": 200, "bytes": {random.randint(200, 5000)}}}\n')
        heapq.heappush(heap, (t + max(1, int(random.expovariate(rate) * 1e6)), ip, rate))
