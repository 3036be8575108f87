#!/usr/bin/env python3
"""Lobbies and catch-up (issue 26): three measurements against a release herald, one run each.

    Benchmarks/lobby.py BUILD_DIR fanout|snapshot|changes

fanout    1,000 observers of /auctions/events?status=open over 100 open auctions, 300 bids at 100/s
          spread over them; then the same with 1,000 observers of one auction's stream (bids on that
          one auction), and the bids with no observer at all. herald-bench checks every observer got
          every bid in order and reports the server's CPU per delivered event and the bids' p99.
snapshot  10,000 auctions; 100 observers of /auctions/events connect at once. Prints the time until
          all have the whole snapshot (every event to the one without "more"), the server's RSS
          before, its peak while they connect (VmHWM, reset through /proc/PID/clear_refs first) and
          after, and how the snapshot is framed (events, bytes).
changes   1,000 clients hold GET /changes?topic=auctions/1&after=N&wait=25; prints RSS per held
          request, then bids once and prints when the last of them has its whole answer, counted
          from the end of the bid's answer.

Herald runs on core 0 (taskset), clients on core 1 (PIN=0: neither pinned). INTERVAL_MS sets the
fan-out's bid spacing (10), OBSERVERS the snapshot's observers (100). Prints JSON lines; BENCHMARKS.md
has the medians.
"""
import json
import os
import selectors
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(build, *extra):
    port = free_port()
    pin = ["taskset", "-c", "0"] if os.environ.get("PIN", "1") == "1" else []
    server = subprocess.Popen([*pin, f"{build}/herald", "--port", str(port), "--in-memory", "--no-examples",
                               "--log-level", "warning", "--connections-per-second", "0", "--streams-per-address", "0",
                               "--connections-per-address", "0", "--writes-per-second", "0", *extra])
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health/live", timeout=1)
            return server, port
        except OSError:
            time.sleep(0.1)
    raise SystemExit("herald did not start")


def call(port, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def bench(build, port, pid, *arguments):
    pin = ["taskset", "-c", "1"] if os.environ.get("PIN", "1") == "1" else []
    output = subprocess.run([*pin, f"{build}/herald-bench", "--port", str(port), "--pid", str(pid),
                             "--idle-seconds", "0", *arguments], check=True, capture_output=True, text=True).stdout
    return json.loads(output)


def fanout(build):
    results = {}
    for name, arguments in [
        ("lobby", ["--subscribers", "1000", "--spread", "100", "--path", "/auctions/events?status=open"]),
        ("oneAuction", ["--subscribers", "1000"]),
        ("noObservers", ["--subscribers", "0", "--spread", "100"]),
    ]:
        server, port = start(build)
        try:
            report = bench(build, port, server.pid, "--events", "300", "--interval-ms", os.environ.get("INTERVAL_MS", "10"), *arguments)
        finally:
            server.terminate()
            server.wait()
        results[name] = {
            "events": report["events"], "cpuMicrosecondsPerDeliveredEvent": report["serverCpuMicrosecondsPerDeliveredEvent"],
            "bidP99Ms": report["bidResponseMilliseconds"]["p99"], "bidP50Ms": report["bidResponseMilliseconds"]["p50"],
            "lastSubscriberP99Ms": report["lastSubscriberMilliseconds"]["p99"] if report["events"]["received"] else None,
        }
    print(json.dumps(results))


def snapshot(build):
    server, port = start(build)
    try:
        for index in range(10_000):
            call(port, "POST", "/auctions", {"item": f"lot {index}", "countdownSeconds": 3600, "startingPrice": index})
        time.sleep(1)
        rss_before = status(server.pid, "VmRSS")
        with open(f"/proc/{server.pid}/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        selector = selectors.DefaultSelector()
        started = time.monotonic()
        clients = []
        for index in range(int(os.environ.get("OBSERVERS", "100"))):
            s = socket.socket()
            s.bind((f"127.0.0.{1 + index % 4}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /auctions/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.setblocking(False)
            state = {"socket": s, "data": bytearray(), "done": None}
            clients.append(state)
            selector.register(s, selectors.EVENT_READ, state)
        waiting = len(clients)
        while waiting and time.monotonic() - started < 60:
            for key, _ in selector.select(timeout=1):
                state = key.data
                try:
                    chunk = state["socket"].recv(1 << 20)
                except BlockingIOError:
                    continue
                state["data"] += chunk
                # The whole snapshot: a snapshot event without "more" (the last), ended by its blank line.
                text = state["data"]
                last = text.rfind(b"event: snapshot\ndata: ")
                if state["done"] is None and last >= 0 and b'"more":true' not in text[last:] and b"\n\n" in text[last:]:
                    state["done"] = time.monotonic() - started
                    waiting -= 1
        peak = status(server.pid, "VmHWM")
        rss_after = status(server.pid, "VmRSS")
        times = sorted(state["done"] for state in clients if state["done"] is not None)
        body = clients[0]["data"]
        events = body.count(b"event: snapshot\n")
        print(json.dumps({
            "observers": len(clients), "complete": len(times), "firstSeconds": round(times[0], 3) if times else None,
            "lastSeconds": round(times[-1], 3) if times else None, "rssKiBBefore": rss_before, "rssKiBPeak": peak,
            "rssKiBAfter": rss_after, "peakRiseMB": round((peak - rss_before) / 1024, 1),
            "snapshotEvents": events, "snapshotBytes": len(body),
        }))
        for state in clients:
            state["socket"].close()
    finally:
        server.terminate()
        server.wait()


def changes(build, count=1000):
    server, port = start(build)
    try:
        auction = call(port, "POST", "/auctions", {"item": "held", "countdownSeconds": 3600})["id"]
        last = call(port, "GET", f"/changes?topic=auctions/{auction}")["last"]
        time.sleep(1)
        rss_before = status(server.pid, "VmRSS")
        selector = selectors.DefaultSelector()
        clients = []
        for index in range(count):
            s = socket.socket()
            s.bind((f"127.0.0.{1 + index % 4}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(f"GET /changes?topic=auctions/{auction}&after={last}&wait=25 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            s.setblocking(False)
            state = {"socket": s, "data": bytearray(), "done": None}
            clients.append(state)
            selector.register(s, selectors.EVENT_READ, state)
        observers = 0
        for _ in range(100):
            observers = call(port, "GET", "/health")["observers"]
            if observers >= count:
                break
            time.sleep(0.1)
        time.sleep(1)
        rss_held = status(server.pid, "VmRSS")
        bidder = socket.create_connection(("127.0.0.1", port))
        body = b'{"bidder":"ann","amount":5}'
        bidder.sendall(b"POST /auctions/%s/bids HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (auction.encode(), len(body), body))
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
            answer += bidder.recv(65536)
        answered = time.monotonic()
        waiting = count
        while waiting and time.monotonic() - answered < 30:
            for key, _ in selector.select(timeout=1):
                state = key.data
                try:
                    chunk = state["socket"].recv(65536)
                except BlockingIOError:
                    continue
                if chunk:
                    state["data"] += chunk
                if state["done"] is None and (not chunk or state["data"].endswith(b'"}')):
                    state["done"] = time.monotonic() - answered
                    selector.unregister(state["socket"])
                    waiting -= 1
        times = sorted(state["done"] for state in clients if state["done"] is not None)
        with_bid = sum(1 for state in clients if b'"event":"bid"' in state["data"])
        print(json.dumps({
            "held": observers, "rssKiBBefore": rss_before, "rssKiBHeld": rss_held,
            "KiBPerHeldRequest": round((rss_held - rss_before) / count, 2), "answered": len(times), "withTheBid": with_bid,
            "firstMs": round(times[0] * 1000, 1) if times else None, "lastMs": round(times[-1] * 1000, 1) if times else None,
        }))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    build, what = sys.argv[1], sys.argv[2]
    {"fanout": fanout, "snapshot": snapshot, "changes": changes}[what](build)
