#!/usr/bin/env python3
"""1,000 running countdowns on a Herald with a data directory: how many rows ticks write, what the
timers cost, and whether a Last-Event-ID from --minutes ago still replays exactly.

Creates --auctions auctions (countdownSeconds 3600), bids once on each (so each countdown runs and
ticks every second), notes the last event id, bids once more on --late of them, then waits --minutes.
It counts the store's rows (events, bids, auctions) and the bytes of its files at the start and the end
of the wait, and reads Herald's CPU time from /proc. At the end it opens one stream per late auction
with the noted Last-Event-ID and checks that each replays exactly its one late bid (no `resync`, no
tick with an id).

  taskset -c 0 .build/release/herald --port 8080 --no-examples --data-dir /tmp/h --writes-per-second 0 --no-access-log --drain-seconds 0 &
  taskset -c 1 python3 Benchmarks/countdowns.py --port 8080 --pid $! --data-dir /tmp/h --minutes 10
"""
import argparse
import http.client
import json
import os
import socket
import sqlite3
import time


def request(conn, method, path, body=None):
    conn.request(method, path, json.dumps(body) if body is not None else None,
                 {"Content-Type": "application/json"} if body is not None else {})
    response = conn.getresponse()
    data = response.read()
    return response.status, (json.loads(data) if data else None)


def rows(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        count = lambda table, where="": db.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0]
        return {"events": count("events"), "ticks": count("events", "WHERE name = 'tick'"), "bids": count("bids"),
                "auctions": count("auctions")}
    finally:
        db.close()


def file_bytes(directory):
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory) if name.startswith("herald.sqlite3"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def replay(port, auction, last_event_id, timeout=5):
    """The events a stream of the auction sends after Last-Event-ID until a second passes quietly."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET /auctions/{auction}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {last_event_id}\r\n\r\n".encode())
    sock.settimeout(1.5)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    sock.close()
    events = []
    for block in data.decode(errors="replace").split("\n\n"):
        fields = {}
        for line in block.splitlines():
            if ":" in line and not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name.strip()] = value.strip()
        if "event" in fields:
            events.append((fields.get("id"), fields["event"]))
    return events


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--auctions", type=int, default=1000)
    parser.add_argument("--late", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10)
    args = parser.parse_args()
    db = os.path.join(args.data_dir, "herald.sqlite3")

    conn = http.client.HTTPConnection("127.0.0.1", args.port)
    ids = []
    for index in range(args.auctions):
        status, auction = request(conn, "POST", "/auctions", {"item": f"lot {index}", "countdownSeconds": 3600})
        assert status == 201, status
        ids.append(auction["id"])
    for auction in ids:
        status, _ = request(conn, "POST", f"/auctions/{auction}/bids", {"bidder": "ann", "amount": 1})
        assert status == 201, status
    time.sleep(2)
    _, health = request(conn, "GET", "/health")
    noted = health["lastEventId"]
    late = ids[:: max(1, len(ids) // args.late)][: args.late]
    for auction in late:
        status, _ = request(conn, "POST", f"/auctions/{auction}/bids", {"bidder": "bob", "amount": 2})
        assert status == 201, status

    before_rows, before_bytes, before_cpu, started = rows(db), file_bytes(args.data_dir), cpu_seconds(args.pid), time.time()
    time.sleep(args.minutes * 60)
    after_rows, after_bytes, after_cpu, elapsed = rows(db), file_bytes(args.data_dir), cpu_seconds(args.pid), time.time() - started

    exact = 0
    mismatches = []
    for auction in late:
        events = replay(args.port, auction, noted)
        replayed = [name for (_, name) in events if name != "tick"]
        ticks_with_id = [event for event in events if event[1] == "tick" and event[0]]
        if replayed == ["bid"] and not ticks_with_id:
            exact += 1
        else:
            mismatches.append({"auction": auction, "events": events[:10]})
    print(json.dumps({
        "auctions": args.auctions, "seconds": round(elapsed),
        "rows_before": before_rows, "rows_after": after_rows,
        "rows_written_per_second": round(sum(after_rows[k] - before_rows[k] for k in ("events", "bids", "auctions")) / elapsed, 3),
        "store_bytes_before": before_bytes, "store_bytes_after": after_bytes,
        "herald_cpu_percent": round(100 * (after_cpu - before_cpu) / elapsed, 1),
        "last_event_id_noted": noted, "replays_exact": f"{exact}/{len(late)}", "mismatches": mismatches[:3],
    }))


if __name__ == "__main__":
    main()
