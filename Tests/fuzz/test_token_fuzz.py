"""Validly signed tokens with hostile claims against a live herald that holds the key (the AddressSanitizer
build in the test command). A bad token is the issuer's bug, but the signature is good, so every check past
the signature runs on it: times that overflow (`exp` 1e300 or 2^64 stopped the process on the first stream
it opened, issue 24), `nbf` and `iat` of any JSON shape, duplicate claims, `crit`, grants of the wrong type.

Each token opens a stream and makes a change. Every answer must be a status below 500 (or 503), the stream
the token opened must be served or refused cleanly, and the server must stay up.
"""
import base64
import hashlib
import hmac
import json
import os
import socket
import time

import herald_process
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

SECRET = b"a-fuzzing-secret-of-at-least-32-bytes!"
BUDGET = max(int(os.environ.get("HERALD_FUZZ_EXAMPLES", "600")) // 4, 20)
DEADLINE = 15.0


@pytest.fixture(scope="module")
def keyed_herald():
    with herald_process.watched(["--in-memory", "--log-level", "warning", "--connections-per-second", "0",
                                 "--writes-per-second", "0", "--jwt-key", SECRET.decode()], "token fuzzer") as running:
        yield running


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def signed(header_json, payload_json):
    """A compact JWS over the JSON texts as given (duplicate members and all), signed HS256 with SECRET."""
    signing_input = b64(header_json.encode()) + b"." + b64(payload_json.encode())
    signature = hmac.new(SECRET, signing_input, hashlib.sha256).digest()
    return (signing_input + b"." + b64(signature)).decode()


def head_of(port, request):
    """Sends `request` and reads until the answer's head is in, the server closes, or the deadline passes.
    Returns the status (None when closed unanswered)."""
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as s:
        s.sendall(request)
        received = b""
        deadline = time.time() + DEADLINE
        while b"\r\n\r\n" not in received and time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            received += chunk
        assert b"\r\n\r\n" in received or not received, f"a partial head: {received[:300]!r}"
        return int(received[9:12]) if received.startswith(b"HTTP/1.") else None


# --- generators ---------------------------------------------------------------------------------

times = st.one_of(
    st.sampled_from(["9999999999999999999", "1e300", "-1e300", "1e20", "18446744073709551616", "9223372036854775807",
                     "-9223372036854775809", "253402300800", "253402300799.999", "4102444800", "0", "-1", "0.5",
                     "1e-400", "-0", "\"4102444800\"", "null", "true", "[]", "{}", "NaN", "Infinity", "1E+308"]),
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
patterns = st.lists(st.sampled_from(["*", "currency", "currency*", "units/*", "", "auctions/1", "x"]), max_size=3)
grants = st.one_of(
    st.just('{"publish":["*"],"subscribe":["*"]}'),
    st.builds(lambda p, s: json.dumps({"publish": p, "subscribe": s}), patterns, patterns),
    st.sampled_from(['{"publish":"*"}', '{"subscribe":[1]}', "[]", "null", '{"publish":["*"],"publish":[]}', '"*"']),
)
subjects = st.one_of(st.none(), st.text(max_size=20).map(json.dumps), st.sampled_from(["1", "null", "[]", '""']))


@st.composite
def tokens(draw):
    members = [("exp", draw(times))]
    if draw(st.booleans()):
        members.append(("nbf", draw(times)))
    if draw(st.booleans()):
        members.append(("iat", draw(times)))
    subject = draw(subjects)
    if subject is not None:
        members.append(("sub", subject))
    members.append(("herald", draw(grants)))
    if draw(st.integers(0, 5)) == 0:
        members.append(("exp", draw(times)))  # a duplicate claim
    members = draw(st.permutations(members))
    payload = "{" + ",".join(f'"{name}":{value}' for name, value in members) + "}"
    header = draw(st.sampled_from(['{"alg":"HS256"}', '{"alg":"HS256","typ":"JWT"}', '{"alg":"HS256","crit":["zzz"]}',
                                   '{"alg":"HS256","crit":[]}', '{"alg":"HS256","alg":"none"}', '{"alg":"HS256","kid":1}']))
    return signed(header, payload)


def exercise(port, process, token):
    stream = (f"GET /events?topic=currency&topic=units HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
              "Accept: text/event-stream\r\n\r\n").encode()
    body = b'{"default":"euro"}'
    change = (f"PUT /currency HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    for request in (stream, change, stream):
        status = head_of(port, request)
        # Answered past the head check (a 400 or 421 would mean the token was never read).
        assert status is not None and status not in (400, 421), f"{status} for {request[:400]!r}"
        assert status < 500 or status == 503, f"{status} for {request[:400]!r}"
        assert process.poll() is None, f"herald died on {request[:400]!r}"


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(token=tokens())
@example(token=signed('{"alg":"HS256"}', '{"exp":9999999999999999999,"herald":{"publish":["*"],"subscribe":["*"]}}'))
@example(token=signed('{"alg":"HS256"}', '{"exp":1e300,"herald":{"publish":["*"],"subscribe":["*"]}}'))
@example(token=signed('{"alg":"HS256"}', '{"exp":1e300,"nbf":-1e300,"iat":1e300,"herald":{"subscribe":["*"]}}'))
@example(token=signed('{"alg":"HS256","crit":["zzz"]}', '{"exp":4102444800,"herald":{"subscribe":["*"]}}'))
@example(token=signed('{"alg":"HS256"}', '{"exp":4102444800,"exp":1,"herald":{"subscribe":["*"]}}'))
def test_signed_tokens_with_any_claims_never_crash_the_server(keyed_herald, token):
    port, process = keyed_herald
    exercise(port, process, token)


def test_the_refusals_the_rfcs_require(keyed_herald):
    """RFC 7515 §4.1.11 (an unknown crit) and RFC 7519 §4 (a duplicate claim): a change with either is 401."""
    port, _ = keyed_herald
    grant = '"herald":{"publish":["*"],"subscribe":["*"]}'
    good = signed('{"alg":"HS256"}', '{"exp":4102444800,' + grant + "}")
    crit = signed('{"alg":"HS256","crit":["zzz"]}', '{"exp":4102444800,' + grant + "}")
    twice = signed('{"alg":"HS256"}', '{"exp":4102444800,"exp":1,' + grant + "}")
    far = signed('{"alg":"HS256"}', '{"exp":1e300,' + grant + "}")
    request = ("PUT /currency HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n"
               'Content-Length: 18\r\nConnection: close\r\n\r\n{{"default":"euro"}}')
    assert head_of(port, request.format(good).encode()) == 200
    assert head_of(port, request.format(far).encode()) == 200
    assert head_of(port, request.format(crit).encode()) == 401
    assert head_of(port, request.format(twice).encode()) == 401
