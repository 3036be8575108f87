#!/usr/bin/env python3
"""Idle connections from one address against a herald under a small open-file limit (issue 24, item 5).

    Benchmarks/idle-connections.py HERALD [COUNT] [-- HERALD_ARGS...]

Starts HERALD under `ulimit -n 1024`, opens COUNT (default 1,100) keep-alive connections from 127.0.0.1,
each asking for /health/live once and then left idle, and then times /health/live and a bid-less read
from 127.0.0.2 (20 probes each on a fresh connection). Prints how many of the idle connections were
answered, how many the server closed or refused, and the probes' times. The audit saw /health/live
unanswered for 5 s with 1,100 such connections.
"""
import socket
import statistics
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, path, source="127.0.0.1", timeout=30.0):
    """Sends GET `path` on a new connection from `source`; returns (socket, answered)."""
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((source, 0))
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return s, False
            data += chunk
        return s, data.startswith(b"HTTP/1.1 200")
    except OSError:
        return s, False


def main():
    binary = sys.argv[1]
    rest = sys.argv[2:]
    count = int(rest.pop(0)) if rest and rest[0] != "--" else 1100
    extra = rest[1:] if rest and rest[0] == "--" else []
    port = free_port()
    server = subprocess.Popen(["/bin/sh", "-c", 'ulimit -n 1024 && exec "$0" "$@"', binary, "--port", str(port), "--in-memory",
                               "--no-examples", "--log-level", "warning", "--connections-per-second", "0"] + extra)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health/live", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        held, answered = [], 0
        start = time.monotonic()
        for _ in range(count):
            s, ok = request(port, "/health/live", timeout=10)
            answered += ok
            held.append(s)
        flood = time.monotonic() - start
        probes = {}
        for path in ("/health/live", "/health/ready", "/currency"):
            times = []
            for _ in range(20):
                began = time.monotonic()
                s, ok = request(port, path, source="127.0.0.2", timeout=30)
                times.append((time.monotonic() - began) * 1000 if ok else float("inf"))
                s.close()
            probes[path] = times
        closed = 0
        for s in held:
            s.setblocking(False)
            try:
                closed += s.recv(1, socket.MSG_PEEK) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        print(f"args {extra}: {count} idle connections from 127.0.0.1 in {flood:.1f} s, {answered} answered, "
              f"{closed} closed by the server since")
        for path, times in probes.items():
            print(f"  {path} from 127.0.0.2: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms, "
                  f"{sum(t == float('inf') for t in times)} unanswered of 20")
        for s in held:
            s.close()
    finally:
        server.terminate()
        server.wait(timeout=20)


main()
