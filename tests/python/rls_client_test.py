#!/usr/bin/python3
"""Envoy RLS v3 client test in Python: `sluice serve --grpc-listen` as a process, called through
stubs generated at test time from the project's protos (protoc + grpc_python_plugin, both from
Debian's protobuf-compiler / protobuf-compiler-grpc). Runs against the memory store and a real
redis-server (started on a free port, stopped by PID).

usage: rls_client_test.py SLUICE_BINARY SOURCE_DIR
"""

import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

SLUICE, SOURCE = sys.argv[1], sys.argv[2]
PROTO_DIR = os.path.join(SOURCE, "proto")
WORK = tempfile.mkdtemp(prefix="sluice-rls-py-")


def generate_stubs():
    protos = ["envoy/type/v3/ratelimit_unit.proto", "envoy/config/core/v3/base.proto",
              "envoy/extensions/common/ratelimit/v3/ratelimit.proto",
              "envoy/service/ratelimit/v3/rls.proto"]
    plugin = ["--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin"]
    subprocess.run(["protoc", "-I", PROTO_DIR, "-I", "/usr/include", "--python_out=" + WORK,
                    "--grpc_python_out=" + WORK] + plugin + protos, check=True)
    # grpc/health/v1/health.proto would generate the Python package `grpc`, hiding grpcio's:
    # compiled from another directory it becomes `sluice_health` (the wire names stay).
    health_dir = os.path.join(WORK, "health_proto", "sluice_health")
    os.makedirs(health_dir)
    with open(os.path.join(PROTO_DIR, "grpc/health/v1/health.proto")) as src, \
            open(os.path.join(health_dir, "health.proto"), "w") as dst:
        dst.write(src.read())
    subprocess.run(["protoc", "-I", os.path.join(WORK, "health_proto"), "--python_out=" + WORK,
                    "--grpc_python_out=" + WORK] + plugin + ["sluice_health/health.proto"],
                   check=True)
    sys.path.insert(0, WORK)


generate_stubs()
import grpc  # noqa: E402
from envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc  # noqa: E402
from sluice_health import health_pb2, health_pb2_grpc  # noqa: E402

OK = rls_pb2.RateLimitResponse.OK
OVER = rls_pb2.RateLimitResponse.OVER_LIMIT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, deadline=15.0):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on %d" % port)


class Redis:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="redis-", dir=WORK)
        subprocess.run(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                        "--save", "", "--appendonly", "no", "--daemonize", "yes",
                        "--pidfile", self.dir + "/redis.pid", "--logfile", self.dir + "/log",
                        "--dir", self.dir], check=True)
        wait_port(self.port)
        # The pid file appears before redis has written the number into it: wait for the number.
        for _ in range(100):
            try:
                with open(self.dir + "/redis.pid") as f:
                    self.pid = int(f.read())
                break
            except (FileNotFoundError, ValueError):
                time.sleep(0.05)
        else:
            raise RuntimeError("redis-server wrote no pid file in " + self.dir)

    def cli(self, *args):
        subprocess.run(["redis-cli", "-p", str(self.port)] + list(args), check=True,
                       stdout=subprocess.DEVNULL)

    def stop(self):
        os.kill(self.pid, signal.SIGTERM)


class Sluice:
    def __init__(self, redis_url):
        self.http_port, self.grpc_port = free_port(), free_port()
        args = [SLUICE, "serve", "--listen", "127.0.0.1:%d" % self.http_port,
                "--grpc-listen", "127.0.0.1:%d" % self.grpc_port,
                "--policies", "sqlite::memory:", "--access-log", "false",
                "--grpc-headers", "x-ratelimit",
                "--policy-file", os.path.join(SOURCE, "tests/python/rls_policies.yaml")]
        if redis_url:
            args += ["--redis", redis_url]
        self.log = open(os.path.join(WORK, "sluice-%d.log" % self.grpc_port), "w")
        self.process = subprocess.Popen(args, stdout=self.log, stderr=self.log)
        wait_port(self.grpc_port)
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % self.grpc_port)
        self.stub = rls_pb2_grpc.RateLimitServiceStub(self.channel)

    def metrics(self):
        url = "http://127.0.0.1:%d/metrics" % self.http_port
        return urllib.request.urlopen(url, timeout=5).read().decode()

    def stop(self):
        self.channel.close()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        self.log.close()


def request(domain, *descriptors, hits_addend=0):
    """descriptors: lists of (key, value) pairs, optionally followed by a dict {"hits": n}."""
    out = rls_pb2.RateLimitRequest(domain=domain, hits_addend=hits_addend)
    for d in descriptors:
        options = d[-1] if d and isinstance(d[-1], dict) else {}
        entries = [e for e in d if not isinstance(e, dict)]
        descriptor = out.descriptors.add()
        for key, value in entries:
            descriptor.entries.add(key=key, value=value)
        if "hits" in options:
            descriptor.hits_addend.value = options["hits"]
    return out


def headers(response):
    return {h.key: h.value for h in response.response_headers_to_add}


class RlsCases:
    """The cases, run once per store (the subclasses set up `sluice`)."""

    def call(self, req, timeout=5):
        return self.sluice.stub.ShouldRateLimit(req, timeout=timeout)

    def test_over_limit_sequence(self):
        for i in range(3):
            r = self.call(request("web", [("user", "alice")]))
            self.assertEqual(r.overall_code, OK)
            self.assertEqual(r.statuses[0].limit_remaining, 2 - i)
            self.assertEqual(r.statuses[0].current_limit.name, "py.per_user")
            self.assertEqual(r.statuses[0].current_limit.requests_per_unit, 3)
            self.assertEqual(headers(r)["x-ratelimit-remaining"], str(2 - i))
        r = self.call(request("web", [("user", "alice")]))
        self.assertEqual(r.overall_code, OVER)
        self.assertEqual(r.statuses[0].code, OVER)
        self.assertGreater(r.statuses[0].duration_until_reset.seconds, 0)
        self.assertEqual(self.call(request("web", [("user", "bob")])).overall_code, OK)

    def test_hits_addend(self):
        self.assertEqual(self.call(request("web", [("user", "carol")], hits_addend=2))
                         .statuses[0].limit_remaining, 1)
        peek = self.call(request("web", [("user", "carol"), {"hits": 0}]))
        self.assertEqual((peek.overall_code, peek.statuses[0].limit_remaining), (OK, 1))
        over = self.call(request("web", [("user", "carol"), {"hits": 2}], hits_addend=1))
        self.assertEqual(over.overall_code, OVER)

    def test_several_descriptors_and_unmatched(self):
        req = request("web", [("user", "dave")], [("route", "checkout"), ("user", "dave")],
                      [("unknown", "x")])
        for i in range(2):
            r = self.call(req)
            self.assertEqual(r.overall_code, OK)
            self.assertEqual([s.current_limit.name for s in r.statuses],
                             ["py.per_user", "py.checkout", ""])
            self.assertEqual(r.statuses[1].limit_remaining, 1 - i)
            self.assertFalse(r.statuses[2].HasField("current_limit"))
        r = self.call(req)
        self.assertEqual(r.overall_code, OVER)
        self.assertEqual([s.code for s in r.statuses], [OK, OVER, OK])
        for domain, entries in [("other", [("user", "x")]), ("web", [("route", "checkout")]),
                                ("web", [("user", "internal")])]:
            for _ in range(5):
                r = self.call(request(domain, entries))
                self.assertEqual(r.overall_code, OK)
                self.assertFalse(r.statuses[0].HasField("current_limit"))
        self.assertEqual(self.call(request("web", [("user", "vip")]))
                         .statuses[0].current_limit.name, "py.vip")

    def test_shadow_answers_ok_and_counts(self):
        for _ in range(3):
            self.assertEqual(self.call(request("web", [("shadow", "s")])).overall_code, OK)
        self.assertIn('sluice_shadow_denials_total{policy="py.shadow"} 2', self.sluice.metrics())

    def test_invalid_requests(self):
        with self.assertRaises(grpc.RpcError) as caught:
            self.call(request("", [("user", "x")]))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_health(self):
        health = health_pb2_grpc.HealthStub(self.sluice.channel)
        for service in ["", "envoy.service.ratelimit.v3.RateLimitService"]:
            r = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            self.assertEqual(r.status, health_pb2.HealthCheckResponse.SERVING)

    def test_reflection_lists_the_services(self):
        # Raw bytes, no generated stubs: ServerReflectionRequest{list_services: ""} is field 7,
        # length-delimited, empty (0x3a 0x00); the answer names the services in plain text.
        call = self.sluice.channel.stream_stream(
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
        answer = b"".join(call(iter([b"\x3a\x00"]), timeout=5))
        self.assertIn(b"envoy.service.ratelimit.v3.RateLimitService", answer)
        self.assertIn(b"grpc.health.v1.Health", answer)

    def test_exactly_the_limit_across_200_concurrent_calls(self):
        req = request("web", [("race", "shared")])
        futures = [self.sluice.stub.ShouldRateLimit.future(req, timeout=30) for _ in range(200)]
        codes = [f.result().overall_code for f in futures]
        self.assertEqual(codes.count(OK), 50)
        self.assertEqual(codes.count(OVER), 150)


class MemoryStoreTest(RlsCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sluice = Sluice(None)

    @classmethod
    def tearDownClass(cls):
        cls.sluice.stop()


class RedisStoreTest(RlsCases, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.redis = Redis()
        cls.sluice = Sluice("redis://127.0.0.1:%d" % cls.redis.port)

    @classmethod
    def tearDownClass(cls):
        cls.sluice.stop()
        cls.redis.stop()

    def test_stalled_store_answered_by_failure_mode_within_deadline(self):
        self.assertEqual(self.call(request("web", [("closed", "warm")])).overall_code, OK)
        self.redis.cli("CLIENT", "PAUSE", "3000", "ALL")
        try:
            started = time.monotonic()
            r = self.call(request("web", [("user", "stalled")], [("closed", "stalled")]),
                          timeout=0.5)
            elapsed = time.monotonic() - started
        finally:
            self.redis.cli("CLIENT", "UNPAUSE")
        self.assertEqual([s.code for s in r.statuses], [OK, OVER])  # fail_open, fail_closed
        self.assertLess(elapsed, 0.5)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
