#!/usr/bin/env python3
"""Bids at a fixed rate, spread round-robin over replicas, and the time each takes to be answered
(issue 30: bid p99 with three replicas at 500 bids/s). Open loop: each bid has its time in the
schedule, and its answer time counts from then, so a slow answer that delays the next send counts
against the next one too (no coordinated omission). Workers per port, each on a keep-alive
connection; amounts from the clock in microseconds, so nearly every bid is taken.

  Benchmarks/bid-rate.py --rate 500 --seconds 10 --auctions 1,2,3 PORT [PORT...]
Prints one JSON object: sent, taken, refused (by status), and the answer times' p50/p90/p99/max (ms).
"""
import argparse, http.client, json, threading, time

parser = argparse.ArgumentParser()
parser.add_argument("--rate", type=float, default=500)
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--auctions", default="1")
parser.add_argument("--workers-per-port", type=int, default=4)
parser.add_argument("ports", type=int, nargs="+")
arguments = parser.parse_args()
auctions = arguments.auctions.split(",")
total = int(arguments.rate * arguments.seconds)
workers = [(port, index) for index in range(arguments.workers_per_port) for port in arguments.ports]
start = time.monotonic() + 0.5
lock = threading.Lock()
times, statuses = [], {}


def work(number, port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    # Bid k (over all workers) is due at start + k / rate; this worker sends every len(workers)-th.
    for k in range(number, total, len(workers)):
        due = start + k / arguments.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        amount = int((time.time() - 1_700_000_000) * 1_000_000) * 64 + number % 64  # below 2^53
        body = json.dumps({"bidder": f"worker {number}", "amount": amount})
        try:
            connection.request("POST", f"/auctions/{auctions[k % len(auctions)]}/bids", body,
                               {"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            status = response.status
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            status = 0
        answered = time.monotonic()
        with lock:
            times.append((answered - due) * 1000)
            statuses[status] = statuses.get(status, 0) + 1


threads = [threading.Thread(target=work, args=(number, port)) for number, (port, _) in enumerate(workers)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
times.sort()


def at(fraction):
    return round(times[min(len(times) - 1, int(fraction * len(times)))], 2) if times else None


print(json.dumps({"sent": len(times), "taken": statuses.get(201, 0),
                  "refused": {str(k): v for k, v in statuses.items() if k != 201},
                  "answerMilliseconds": {"p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": round(times[-1], 2) if times else None}}))
