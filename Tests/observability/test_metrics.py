"""/metrics after a scripted workload, read with Prometheus's own text parser (prometheus-client):
the counters equal what the workload did. Runs against the binary in HERALD_BINARY, or the debug build."""
import json
import signal
import socket
import time
import urllib.error
import urllib.request

import herald_process
import pytest
from prometheus_client.parser import text_string_to_metric_families



@pytest.fixture
def herald():
    process, port = herald_process.start(["--in-memory", "--no-examples", "--log-level", "warning", "--heartbeat-seconds", "1",
                                          "--drain-seconds", "0"])
    yield f"http://127.0.0.1:{port}", port
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0


def call(origin, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(origin + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if body is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def scrape(origin):
    """Every sample as {(name, ((label, value), ...)): value}, parsed by prometheus-client."""
    with urllib.request.urlopen(origin + "/metrics", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0)


class Stream:
    """A raw SSE client: reads events (not comments) as they come."""

    def __init__(self, port, path, receive_buffer=None):
        self.socket = socket.socket()
        if receive_buffer:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.socket.connect(("127.0.0.1", port))
        self.socket.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        self.buffer = b""
        self.events = []

    def read_until(self, count, timeout=30):
        """Reads until `count` events (with an `event:` line) have come."""
        self.socket.settimeout(0.2)
        deadline = time.time() + timeout
        while len(self.events) < count and time.time() < deadline:
            try:
                chunk = self.socket.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            self.buffer += chunk
            while b"\n\n" in self.buffer:
                block, self.buffer = self.buffer.split(b"\n\n", 1)
                names = [line[6:].strip() for line in block.split(b"\n") if line.startswith(b"event:")]
                self.events.extend(names)
        return self.events

    def close(self):
        self.socket.close()


def eventually(check, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def test_the_counters_equal_what_the_workload_did(herald):
    origin, port = herald
    status, auction = call(origin, "POST", "/auctions", {"item": "lamp", "countdownSeconds": 3600, "startingPrice": 10})
    assert status == 201
    bids = f"/auctions/{auction['id']}/bids"
    for amount in (20, 30, 40, 50, 60):
        assert call(origin, "POST", bids, {"bidder": "ann", "amount": amount})[0] == 201
    assert call(origin, "POST", bids, {"bidder": "bob", "amount": 15})[0] == 409  # too low: refused
    assert call(origin, "GET", "/auctions/9999")[0] == 404
    assert call(origin, "GET", "/no/such/route")[0] == 404

    # One stream, on a subject without ticks: its snapshot, then three changes.
    watcher = Stream(port, "/currency/events")
    assert watcher.read_until(1) == [b"snapshot"]
    for currency in ("euro", "turkishLira", "gramGold"):
        assert call(origin, "PUT", "/currency", {"default": currency})[0] == 200
    assert len(watcher.read_until(4)) == 4

    samples = scrape(origin)
    requests = "herald_http_requests_total"
    assert value(samples, requests, method="POST", route="/auctions", status="201") == 1
    assert value(samples, requests, method="POST", route="/auctions/{id}/bids", status="201") == 5
    assert value(samples, requests, method="POST", route="/auctions/{id}/bids", status="409") == 1
    assert value(samples, requests, method="GET", route="/auctions/{id}", status="404") == 1
    assert value(samples, requests, method="GET", route="unmatched", status="404") == 1
    assert value(samples, requests, method="PUT", route="/currency", status="200") == 3
    assert value(samples, requests, method="GET", route="/currency/events", status="200") == 1
    assert value(samples, "herald_http_request_duration_seconds_count",
                 method="POST", route="/auctions/{id}/bids", status="201") == 5
    assert value(samples, "herald_events_published_total", type="bid") == 5
    assert value(samples, "herald_events_published_total", type="currency") == 3
    assert value(samples, "herald_events_delivered_total") == 4
    assert value(samples, "herald_streams_open") == 1
    assert value(samples, "herald_observers", kind="currency") == 1
    assert value(samples, "herald_writer_batch_changes_sum") >= 9  # the auction, 5 bids, 3 currencies (+ refusals)
    assert value(samples, "herald_events_published_total", type="auction") == 1  # the opening: lobbies see it enter
    assert value(samples, "herald_last_event_id") == 9  # the auction's opening, 5 bids and 3 currencies
    assert value(samples, "process_open_fds") > 0
    assert value(samples, "process_resident_memory_bytes") > 1_000_000
    assert value(samples, "herald_slow_consumer_disconnects_total") == 0

    # A client that resumes within the history is a replay; one from an unknown id, a resync.
    replay = Stream(port, "/currency/events?lastEventId=" + "1")
    resync = Stream(port, "/currency/events?lastEventId=999999")
    replay.read_until(3)
    resync.read_until(1)
    samples = scrape(origin)
    assert value(samples, "herald_replays_total") == 1
    assert value(samples, "herald_resyncs_total") == 1
    for stream in (watcher, replay, resync):
        stream.close()
    assert eventually(lambda: value(scrape(origin), "herald_streams_open") == 0)
    assert value(scrape(origin), "herald_streams_closed_total", reason="client left") == 3


def test_a_slow_consumer_is_disconnected_and_counted(herald):
    origin, port = herald
    # A client that never reads, with a tiny receive window, while 3 MiB of notifications come.
    slow = Stream(port, "/notifications/flood/events", receive_buffer=4096)
    assert eventually(lambda: value(scrape(origin), "herald_streams_open") == 1)
    for _ in range(100):
        assert call(origin, "POST", "/notifications/flood", {"userInfo": {"text": "x" * 30_000}})[0] == 202
    # Blocked through two heartbeat rounds (1 s each), or its queue overflowed: either way, cut off.
    assert eventually(lambda: value(scrape(origin), "herald_slow_consumer_disconnects_total") == 1, timeout=30)
    samples = scrape(origin)
    assert value(samples, "herald_streams_closed_total", reason="slow consumer") == 1
    assert value(samples, "herald_streams_open") == 0
    slow.close()
