#!/usr/bin/env python3
"""Holds N SSE streams open against a running Herald, publishes a burst of bids, and reports what the
server process used: a quick measurement until the real benchmark (herald-bench) exists.

  scripts/hold-streams.py --port 8080 --pid $(pidof herald) --clients 10000 --bids 50
"""
import argparse, json, os, selectors, socket, time, urllib.request

def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(request))

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--bids", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()

    auction = post(args.port, "/auctions", {"item": "load", "countdownSeconds": 3600})["id"]
    rss_before, cpu_before = status(args.pid, "VmRSS"), cpu_seconds(args.pid)
    selector = selectors.DefaultSelector()
    counts = {}
    start = time.time()
    for index in range(args.clients):
        s = socket.create_connection(("127.0.0.1", args.port))
        s.sendall(f"GET /auctions/{auction}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ, index)
        counts[index] = 0

    def pump(target, deadline):
        while min(counts.values()) < target and time.time() < deadline:
            for key, _ in selector.select(timeout=0.5):
                data = key.fileobj.recv(65536)
                counts[key.data] += data.count(b"\nevent: ")
        return min(counts.values()) >= target

    snapshots = pump(1, start + args.timeout)
    connected = time.time() - start
    rss_held, cpu_connected = status(args.pid, "VmRSS"), cpu_seconds(args.pid)
    threads = status(args.pid, "Threads")
    time.sleep(5)
    cpu_idle = (cpu_seconds(args.pid) - cpu_connected) / 5
    publish_start = time.time()
    for amount in range(1, args.bids + 1):
        post(args.port, f"/auctions/{auction}/bids", {"bidder": "b", "amount": amount})
        time.sleep(0.02)
    delivered = pump(1 + args.bids, publish_start + args.timeout)
    burst = time.time() - publish_start
    cpu_publish = cpu_seconds(args.pid) - cpu_connected - cpu_idle * 5
    print(json.dumps({
        "clients": args.clients, "allSnapshots": snapshots, "secondsToConnect": round(connected, 2),
        "allBids": delivered, "burstSeconds": round(burst, 2), "threads": threads,
        "rssKiBBefore": rss_before, "rssKiBHeld": rss_held,
        "rssKiBPerStream": round((rss_held - rss_before) / args.clients, 2),
        "idleCpuFractionOfCore": round(cpu_idle, 4),
        "publishCpuSeconds": round(cpu_publish, 3),
        "cpuMicrosecondsPerDeliveredEvent": round(cpu_publish / (args.clients * args.bids) * 1e6, 2),
    }, indent=1))

if __name__ == "__main__":
    main()
