"""A fault-injecting HTTP proxy for testing API backends against a real server (stdlib only).

It sits on 127.0.0.1 in front of an upstream server (e.g. vLLM) and, on a seeded, bounded
schedule, answers some requests itself with a fault instead of forwarding them:

* ``429``      — HTTP 429 with ``Retry-After`` (not forwarded)
* ``500``      — HTTP 500 (not forwarded)
* ``garbage``  — HTTP 200 with a body that is not JSON (not forwarded)
* ``stall``    — reads the request, then says nothing for ``stall_s`` seconds and closes (not
                 forwarded; the client's timeout fires)
* ``drop``     — closes the connection without an answer (not forwarded)
* ``drop_after`` — forwards the request upstream, then drops the connection instead of
                 relaying the answer (the upstream *did* answer: a retry is forwarded again)

Every request forwarded upstream is counted per key (sha256 of method, path and body), as are
the post-forward faults, so a test can check that each request reached the server exactly
``1 + drop_after faults`` times.  ``python tests/fault_proxy.py --upstream URL --port P`` runs it
standalone.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

KINDS = ("429", "500", "garbage", "stall", "drop", "drop_after")


class FaultSchedule:
    """Seeded and bounded: each request (by arrival) gets a fault with probability ``rate``,
    while the kind's budget ``max_per_kind`` lasts and the key has had fewer than
    ``max_per_key`` faults (so a client with a retry budget above that always gets through)."""

    def __init__(
        self,
        seed: int = 0,
        rate: float = 0.3,
        kinds=KINDS,
        max_per_kind: int = 5,
        max_per_key: int = 2,
    ):
        self.rng = random.Random(seed)
        self.rate, self.kinds = rate, tuple(kinds)
        self.max_per_kind, self.max_per_key = max_per_kind, max_per_key
        self.lock = threading.Lock()
        self.injected: Counter = Counter()
        self.per_key: Counter = Counter()

    def decide(self, key: str) -> str | None:
        with self.lock:
            roll, kind = self.rng.random(), self.rng.choice(self.kinds)
            if roll >= self.rate or self.per_key[key] >= self.max_per_key:
                return None
            if self.injected[kind] >= self.max_per_kind:
                return None
            self.injected[kind] += 1
            self.per_key[key] += 1
            return kind


class FaultProxy:
    def __init__(
        self,
        upstream: str,
        schedule: FaultSchedule | None = None,
        port: int = 0,
        stall_s: float = 3.0,
        retry_after: str = "1",
        fault_paths=("/v1/",),
    ):
        u = urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port or 80
        self.schedule = schedule or FaultSchedule(rate=0.0)
        self.stall_s, self.retry_after, self.fault_paths = stall_s, retry_after, fault_paths
        self.lock = threading.Lock()
        self.forwarded: Counter = Counter()  # key -> times sent upstream
        self.after_faults: Counter = Counter()  # key -> drop_after faults
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                proxy._handle(self)

            def do_POST(self):
                proxy._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "FaultProxy":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- one request ------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        n = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(n) if n else b""
        key = hashlib.sha256(h.command.encode() + b" " + h.path.encode() + b"\n" + body).hexdigest()
        with self.lock:
            self.requests += 1
        fault = self.schedule.decide(key) if h.path.startswith(self.fault_paths) else None
        if fault == "429":
            return _reply(
                h,
                429,
                b'{"error": {"message": "rate limited (injected)"}}',
                {"Retry-After": self.retry_after},
            )
        if fault == "500":
            return _reply(h, 500, b'{"error": {"message": "internal error (injected)"}}')
        if fault == "garbage":
            return _reply(h, 200, b'{"id": "cmpl-x", "choices": [{"text": "tru')
        if fault == "stall":
            time.sleep(self.stall_s)
            return _drop(h)
        if fault == "drop":
            return _drop(h)
        status, headers, data = self._forward(h, body, key)
        if fault == "drop_after":
            with self.lock:
                self.after_faults[key] += 1
            return _drop(h)
        _reply(
            h,
            status,
            data,
            {k: v for k, v in headers if k.lower() in ("content-type", "retry-after")},
        )

    def _forward(self, h, body: bytes, key: str):
        conn = http.client.HTTPConnection(self.up_host, self.up_port, timeout=600)
        try:
            hdrs = {
                k: v
                for k, v in h.headers.items()
                if k.lower() not in ("host", "connection", "content-length", "accept-encoding")
            }
            conn.request(h.command, h.path, body=body or None, headers=hdrs)
            with self.lock:
                self.forwarded[key] += 1
            r = conn.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            conn.close()

    def report(self) -> dict:
        return {
            "requests": self.requests,
            "injected": dict(self.schedule.injected),
            "forwarded": sum(self.forwarded.values()),
            "keys": len(self.forwarded),
            "drop_after": sum(self.after_faults.values()),
        }


def _reply(h, status: int, data: bytes, headers: dict | None = None) -> None:
    h.send_response(status)
    h.send_header(
        "Content-Type",
        (headers or {}).pop("Content-Type", None)
        or (headers or {}).pop("content-type", None)
        or "application/json",
    )
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)
    h.wfile.flush()


def _drop(h) -> None:
    h.close_connection = True
    try:
        h.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, default=0.3)
    p.add_argument("--max-per-kind", type=int, default=5)
    p.add_argument("--stall", type=float, default=3.0)
    a = p.parse_args()
    px = FaultProxy(
        a.upstream, FaultSchedule(a.seed, a.rate, max_per_kind=a.max_per_kind), a.port, a.stall
    ).start()
    print(f"fault proxy on {px.url} -> {a.upstream}", flush=True)
    try:
        while True:
            time.sleep(5)
            print(json.dumps(px.report()), flush=True)
    except KeyboardInterrupt:
        px.stop()


if __name__ == "__main__":
    main()
