"""A raw-socket HTTP fuzzer against a live herald (the AddressSanitizer build in the test command).

Requests are generated, not listed: request lines, targets with percent-escapes and query strings,
topic lists, headers (framing, Host, Accept-Language, Last-Event-ID, Origin), chunked and plain bodies.
Every example must get an answer or a close within the deadline (never a hang), never a 5xx other
than 501/503/505, never more answers than requests (a smuggled request), and the server must stay up.
The shapes from the issues are pinned as @example, so the corpus keeps them covered.
"""
import os
import re
import socket
import time
import urllib.error
import urllib.request

import herald_process
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

BUDGET = int(os.environ.get("HERALD_FUZZ_EXAMPLES", "600"))
DEADLINE = 15.0
STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


@pytest.fixture(scope="module")
def herald():
    # One connection per example, as fast as hypothesis makes them: the per-address connection rate
    # (a limit of its own, tested in LimitTests) would close some unanswered.
    with herald_process.watched(["--in-memory", "--log-level", "warning", "--connections-per-second", "0",
                                 "--writes-per-second", "0"], "fuzzer") as running:
        yield running


def exchange(port, data):
    """Sends `data` on a new connection (then half-closes) and reads until the server closes or stops
    sending. Returns (bytes received, whether the server closed, whether it hung)."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as s:
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server closed first: it read enough to refuse
        received = b""
        start = time.time()
        s.settimeout(0.5)
        while time.time() - start < DEADLINE:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                if STATUS.search(received):
                    return received, False, False  # answered; a stream or keep-alive may stay open
                continue
            except OSError:
                return received, True, False  # reset: a refusal
            if not chunk:
                return received, True, False
            received += chunk
        return received, False, not STATUS.search(received)


def alive(port):
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=15).status == 200


# --- generators ---------------------------------------------------------------------------------

token = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~", min_size=0, max_size=12)
escape = st.sampled_from(["%00", "%2F", "%2f", "%25", "%zz", "%", "%2", "%C3%A9", "%FF", "+", "..", ".", "//"])
segment = st.lists(st.one_of(token, escape), min_size=0, max_size=4).map("".join)
paths = st.one_of(
    st.sampled_from(["/", "/health", "/subjects", "/events", "/currency", "/currency/events", "/auctions", "/auctions/1",
                     "/auctions/1/bids", "/auctions/1/bids/1", "/auctions/1/events", "/trips", "/trips/1", "/trips/1/delay",
                     "/trips/1/events", "/units", "/units/scout", "/units/events", "/notifications/door",
                     "/notifications/door/events", "/openapi.yaml", "/favicon.ico", "*", "/changes", "/auctions/events",
                     "/trips/events", "/presence", "/streams/0123456789abcdef0123456789abcdef/token", "/streams//token"]),
    st.lists(segment, min_size=0, max_size=6).map(lambda parts: "/" + "/".join(parts)),
)
topics = st.one_of(
    st.sampled_from(["currency", "units", "units/scout", "auctions/1", "trips/1", "notifications/a", "currency/",
                     "/currency", "units/", "notifications/..", "", "auctions/999999999999999999999", "auctions;status=open",
                     "units;status=dead,", "trips;delayed=true;delayed=false", "currency;status=open", "auctions;", "auctions;=;",
                     "presence/currency", "presence/presence/units", "presence/auctions/1", "trips;status=open"]),
    st.tuples(st.sampled_from(["auctions", "trips", "units", "notifications", "x"]), segment).map("/".join),
)
query_pair = st.one_of(
    st.tuples(st.just("topic"), topics),
    st.tuples(st.sampled_from(["snapshot", "lastEventId", "locale", "fields", "object", "x", "after", "wait", "status",
                               "delayed", "added", "limit", "access_token", "colour"]), segment),
    st.tuples(segment, segment),
).map(lambda kv: f"{kv[0]}={kv[1]}")
queries = st.one_of(
    st.just(""),
    st.lists(query_pair, min_size=1, max_size=80).map(lambda pairs: "?" + "&".join(pairs)),
    st.integers(min_value=100, max_value=3000).map(lambda n: "?" + "&".join(["x=a"] * n)),
)
methods = st.sampled_from(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "BREW", "get", ""])
versions = st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "", "http/1.1", "HTTP/1.1 x"])
header_value = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40),
    st.sampled_from(["2\x00NN", "a\rb", "a\r\n b", "\x00", ";", ";;", ";, en", ";q=1", ", en", "de-DE,de;q=0.9", "*", "ja", "-5", "0", "99999999999999999999",
                     "chunked", "xchunked", "gzip, chunked", "chunked, identity", "identity", "W/\"x\"", "\"x\"",
                     "9223372036854775807", "18446744073709551616", "http://127.0.0.1", "evil.example"]),
)
header_name = st.one_of(
    st.sampled_from(["Host", "Content-Length", "Transfer-Encoding", "Content-Type", "Accept-Language", "Last-Event-ID",
                     "If-None-Match", "If-Match", "Authorization", "Idempotency-Key", "Origin", "Access-Control-Request-Headers",
                     "Connection", "Expect", "Cookie",
                     "Content-Length ", " Host", "Host\t", "X"]),
    token,
)
headers = st.lists(st.tuples(header_name, header_value), max_size=12)
bodies = st.one_of(
    st.just(b""),
    st.binary(max_size=300),
    st.sampled_from([b'{"default":"euro"}', b'{"name":"A","status":"healthy"}', b'{"bidder":"a","amount":1e-400}',
                     b'{"a":1,}', b'{"a":1,"a":2}', b'{"deltaSeconds":86400}', b'{"actualDeparture":"9999-12-31T23:59:59Z"}',
                     b"5\r\nhello\r\n0\r\n\r\n", b"zz\r\nhello\r\n", b"0\r\n\r\n"]),
)


@st.composite
def requests(draw):
    method, target, version = draw(methods), draw(paths) + draw(queries), draw(versions)
    lines = [f"{method} {target} {version}".rstrip()]
    if draw(st.booleans()):
        lines.append("Host: 127.0.0.1")
    lines += [f"{name}: {value}" for name, value in draw(headers)]
    body = draw(bodies)
    if draw(st.booleans()):
        lines.append(f"Content-Type: application/json\r\nContent-Length: {len(body)}")
    head = "\r\n".join(lines).encode("latin-1", errors="replace")
    return head + b"\r\n\r\n" + body


SHAPES = [  # the issues' findings, kept in the corpus
    b"GET /trips/1 HTTP/1.1\r\nHost: x\r\nAccept-Language: ;\r\n\r\n",
    b"GET /trips/1 HTTP/1.1\r\nHost: x\r\nAccept-Language: ;, en\r\n\r\n",
    b"GET /health?" + b"&".join([b"x=a"] * 130) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /health?" + b"&".join([b"x=a"] * 1000) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"HEAD /currency/events HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\nContent-Length: 104\r\n\r\n"
    b"PUT /units/smuggled HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 34\r\n\r\n"
    b'{"name":"Smuggl","status":"dead"} ',
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Length : 5\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET /health HTTP/1.1\r\n\r\n",
    b"GET /health%00/x HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /auctions/1%2Fbids HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET http://127.0.0.1/health HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /events?topic=currency/&topic=/currency HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /events?topic= HTTP/1.1\r\nHost: x\r\n\r\n",
    b"PUT /units/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{\"a\":1,}",
    b"OPTIONS /units HTTP/1.1\r\nHost: x\r\nAccess-Control-Request-Headers: " + b"a, " * 2000 + b"b\r\n\r\n",
    b"\x01\x02GARBAGE \x7f\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n",
    b"PUT /units/evil HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    b"PUT /units/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 19\r\n\r\n{\"name\":1,\"name\":2}",
    b"POST /auctions/1/bids HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 33\r\n\r\n"
    b"{\"bidder\":\"a\",\"amount\":1e-400}",
    b"GET /auctions/1%00junk HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /events?topic=units/&topic=notifications/.. HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /trips/1 HTTP/1.1\r\nHost: x\r\n: \r\nHost: \r\n\r\n",
    # issue 24: a NUL, a CR or a fold in a field value (read up to the NUL, Content-Length was 2)
    b"POST /notifications/a HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\x00NN\r\n\r\n{}"
    b"PUT /units/smuggled HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 34\r\n\r\n"
    b'{"name":"Smuggl","status":"dead"} ',
    b"GET /health HTTP/1.1\r\nHost: x\x00y\r\nX-A: 1\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n",
    b"GET /health HTTP/1.1\r\nHost: x\r\nX-A:\x00\r\n\r\n",
    # issue 24: a token whose exp is past any deadline Herald keeps (1e300, 2^64-ish), and one that is not JSON
    b"GET /currency/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjFlMzAwfQ.x\r\n\r\n",
    b"GET /currency/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjk5OTk5OTk5OTk5OTk5OTk5OTk5fQ.x\r\n\r\n",
    b"GET /currency/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer eyJhbGciOiJIUzI1NiIsImNyaXQiOlsienp6Il19.eyJleHAiOjEsImV4cCI6Mn0.x\r\n\r\n",
]


MALFORMED_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*(?![0-9]+[ \t]*\r\n)", re.IGNORECASE)


def check(port, data):
    received, closed, hung = exchange(port, data)
    assert not hung, f"no answer and no close within {DEADLINE}s for {data[:300]!r}"
    statuses = [int(code) for code in STATUS.findall(received)]
    requests_sent = max(1, data.count(b"HTTP/1."))
    if MALFORMED_LENGTH.search(data.split(b"\r\n\r\n")[0] + b"\r\n"):
        # libmicrohttpd 0.9.75 answers a Content-Length that is not digits itself, and writes that answer's
        # head twice (connection.c:4539-4542 sets the state back after parse_connection_headers queued
        # it); Herald is never called. The status is right and the connection closes. docs/api.md, "Limits".
        requests_sent += 1
    if re.search(rb"\r?\n:", data.split(b"\r\n\r\n")[0]):
        # libmicrohttpd 0.9.75 ends the head at a field line that begins with ':' (process_header_line
        # zeroes the colon in place, connection.c:3443, and the empty-line test at connection.c:4531
        # then sees an empty line); what follows is read as another request. docs/api.md, "Limits".
        requests_sent += data.count(b"\r\n\r\n") + 1
    assert len(statuses) <= requests_sent, f"more answers than requests: {statuses} for {data[:300]!r}"
    for status in statuses:
        assert status < 500 or status in (501, 503, 505), f"{status} for {data[:300]!r}: {received[:500]!r}"
    assert closed or statuses, f"neither answered nor closed: {data[:300]!r}"


@pytest.mark.parametrize("shape", SHAPES)
def test_the_issues_shapes_are_answered(herald, shape):
    port, _ = herald
    check(port, shape)
    assert alive(port)


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(data=requests())
@example(data=b"GET /units/events HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 99999999999999999999999\r\n\r\n")
def test_generated_requests_never_hang_crash_or_smuggle(herald, data):
    port, process = herald
    check(port, data)
    assert process.poll() is None, "herald died"


def test_the_server_is_still_up_and_nothing_was_smuggled(herald):
    port, _ = herald
    assert alive(port)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/units/smuggled", timeout=5)
    except urllib.error.HTTPError as error:
        assert error.code == 404
        return
    pytest.fail("a smuggled request created a unit")
