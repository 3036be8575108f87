#!/usr/bin/env python3
"""One client bids in a loop on one auction until it has --bids bids, then goes on bidding for
--seconds more; meanwhile another process asks GET /health every --health-interval-ms. Prints one
JSON object: the bid's answer time at the start (bids 1-100) and once the auction has --bids bids
(every bid after that), and /health's answer times during those --seconds.

  taskset -c 0 .build/release/herald --port 8080 --no-examples --data-dir /tmp/h --writes-per-second 0 --no-access-log --drain-seconds 0 &
  taskset -c 1 python3 Benchmarks/bid-history.py --port 8080
"""
import argparse
import http.client
import json
import multiprocessing
import statistics
import time


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def health_loop(port, interval, stop, out):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    samples = []
    while not stop.is_set():
        started = time.perf_counter()
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        took = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"/health answered {response.status}")
        samples.append((time.time(), took))
        time.sleep(max(0.0, interval - took))
    out.put(samples)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--bids", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=10, help="bidding on after --bids, while /health is timed")
    parser.add_argument("--health-interval-ms", type=float, default=5)
    args = parser.parse_args()

    conn = http.client.HTTPConnection("127.0.0.1", args.port)
    headers = {"Content-Type": "application/json"}
    conn.request("POST", "/auctions", json.dumps({"item": "bench", "countdownSeconds": 3600}), headers)
    response = conn.getresponse()
    auction = json.loads(response.read())["id"]

    stop = multiprocessing.Event()
    out = multiprocessing.Queue()
    checker = multiprocessing.Process(target=health_loop, args=(args.port, args.health_interval_ms / 1000, stop, out))
    checker.start()

    times = []
    late_from = None
    started = time.perf_counter()
    amount = 0
    while True:
        amount += 1
        if amount == args.bids + 1:
            late_from = time.time()
        if late_from is not None and time.time() - late_from >= args.seconds:
            break
        t = time.perf_counter()
        conn.request("POST", f"/auctions/{auction}/bids", json.dumps({"bidder": "ann", "amount": amount}), headers)
        response = conn.getresponse()
        response.read()
        times.append(time.perf_counter() - t)
        if response.status != 201:
            raise SystemExit(f"bid {amount} answered {response.status}")
    elapsed = time.perf_counter() - started
    late_until = time.time()
    stop.set()
    samples = out.get()
    checker.join()

    health = [took for (at, took) in samples if late_from <= at <= late_until]
    first, last = times[:100], times[args.bids:]
    ms = lambda s: round(s * 1000, 3)
    print(json.dumps({
        "bids": len(times),
        "bids_per_second": round(len(times) / elapsed),
        "bid_ms_first_100": {"median": ms(statistics.median(first)), "p99": ms(percentile(first, 0.99))},
        "bid_ms_after": {"bids": args.bids, "median": ms(statistics.median(last)), "p99": ms(percentile(last, 0.99))},
        "health_samples": len(health),
        "health_ms": {"median": ms(statistics.median(health)), "p99": ms(percentile(health, 0.99)), "max": ms(max(health))},
    }))


if __name__ == "__main__":
    main()
