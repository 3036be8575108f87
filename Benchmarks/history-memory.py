#!/usr/bin/env python3
"""The replay history's memory under large events (never-down part three): one client posts N
notifications of SIZE bytes to a fresh `herald --in-memory` (no write limit) and the server's RSS is
read from /proc before and after, and again after a resume from before the history (a resync).

    Benchmarks/history-memory.py [BINARY] [N] [SIZE] [extra herald arguments...]
    Benchmarks/history-memory.py .build/release/herald 12000 60000
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/herald"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 12_000
size = int(sys.argv[3]) if len(sys.argv) > 3 else 60_000
extra = sys.argv[4:]

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen([binary, "--port", str(port), "--in-memory", "--no-examples", "--writes-per-second", "0",
                           "--log-level", "warning", "--no-access-log", *extra], stderr=subprocess.DEVNULL)


def rss_mib():
    with open(f"/proc/{server.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    before = rss_mib()
    body = json.dumps({"userInfo": {"pad": "x" * size}})
    started = time.time()
    for index in range(count):
        connection.request("POST", "/notifications/flood", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        assert response.status == 202, response.status
    after = rss_mib()
    connection.request("GET", "/metrics")
    metrics = connection.getresponse().read().decode()
    kept = next((line.split()[1] for line in metrics.splitlines() if line.startswith("herald_history_events ")), "?")
    print(f"{count} notifications of {size} bytes in {time.time() - started:.1f} s: RSS {before:.0f} MiB before, "
          f"{after:.0f} MiB after ({after - before:+.0f} MiB); {kept} events kept for replay")
finally:
    server.terminate()
    server.wait()
