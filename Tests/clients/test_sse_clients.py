"""Popular SSE client libraries read Herald's streams as Herald means them: every stream's first block
is an event with data (`ready`, naming the id it starts after, when there is nothing else to send), so a
client that reconnects before the first change still sends `Last-Event-ID` and misses nothing; and the
stream's `retry:` travels in that block, so no client sees an empty event."""
import json
import threading
import urllib.request

import httpx
import pytest
import sseclient
import urllib3
from httpx_sse import connect_sse
from ld_eventsource import SSEClient as LDClient
from ld_eventsource.config import ConnectStrategy

import herald_process


@pytest.fixture(scope="module")
def herald():
    process, port = herald_process.start(["--in-memory", "--no-examples"])
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=20)


def post(base, name, n):
    request = urllib.request.Request(f"{base}/notifications/{name}", data=json.dumps({"userInfo": {"n": n}}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    return json.load(urllib.request.urlopen(request, timeout=10))["id"]


def test_sseclient_py_resumes_after_reconnecting_before_the_first_event(herald):
    http = urllib3.PoolManager()
    # Connected, then gone before any notification: the id it knows is the ready event's.
    first = http.request("GET", f"{herald}/notifications/alpha/events", preload_content=False,
                         headers={"Accept": "text/event-stream"}, timeout=urllib3.Timeout(read=10))
    event = next(sseclient.SSEClient(first).events())
    first.release_conn()
    first.close()
    assert event.event == "ready" and event.id, f"the first event has an id to resume from: {event}"
    assert json.loads(event.data) == {"lastEventId": event.id}
    posted = post(herald, "alpha", 1)  # while it is away
    again = http.request("GET", f"{herald}/notifications/alpha/events", preload_content=False,
                         headers={"Accept": "text/event-stream", "Last-Event-ID": event.id}, timeout=urllib3.Timeout(read=10))
    resumed = next(e for e in sseclient.SSEClient(again).events() if e.event == "notification")
    again.close()
    assert resumed.id == posted and json.loads(resumed.data)["userInfo"] == {"n": 1}


def test_launchdarkly_eventsource_resumes_after_reconnecting_before_the_first_event(herald):
    client = LDClient(connect=ConnectStrategy.http(f"{herald}/notifications/beta/events"))
    events = client.events
    first = next(events)
    assert first.event == "ready" and client.last_event_id == first.id, f"{first}, last id {client.last_event_id}"
    client.close()
    posted = post(herald, "beta", 2)
    # A new client given the id it kept, as a reconnecting one sends it.
    again = LDClient(connect=ConnectStrategy.http(f"{herald}/notifications/beta/events"), last_event_id=client.last_event_id)
    resumed = next(e for e in again.events if e.event == "notification")
    again.close()
    assert resumed.id == posted


@pytest.mark.parametrize("path", ["/notifications/gamma/events", "/currency/events", "/auctions/events?snapshot=false"])
def test_httpx_sse_sees_no_empty_event(herald, path):
    seen = []
    with httpx.Client(timeout=10) as client, connect_sse(client, "GET", herald + path) as source:
        for event in source.iter_sse():
            seen.append(event)
            break
    first = seen[0]
    assert first.event in ("ready", "snapshot") and first.data, f"the first event has a name and data: {first.event!r} {first.data!r}"
    assert source.response.headers["content-type"].startswith("text/event-stream")
