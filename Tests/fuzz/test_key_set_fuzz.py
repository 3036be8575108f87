"""A herald whose token keys are a JWK Set of two keys (`kid` "a" and "b"), against tokens whose `kid` is
anything: a key's, the other key's, one that names no key, none, not a string, huge, or of odd bytes.
Only a token signed with the key its `kid` names is let through; every other is a 401 with a problem, never a
5xx, and the server stays up. Then key files that are no key set: a huge one, at start and at a reload
(`SIGHUP`), is refused without being read whole, and the keys Herald has are kept.
"""
import base64
import hashlib
import hmac
import json
import os
import resource
import signal
import socket
import subprocess
import tempfile
import time

import herald_process
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

SECRETS = {"a": b"the first fuzzing secret, 32 bytes long!", "b": b"the second fuzzing secret, 32 bytes or more"}
BUDGET = max(int(os.environ.get("HERALD_FUZZ_EXAMPLES", "600")) // 4, 20)
DEADLINE = 15.0
GRANT = '"herald":{"publish":["*"],"subscribe":["*"]}'


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def key_set(kids):
    return json.dumps({"keys": [{"kty": "oct", "kid": kid, "k": b64(SECRETS[kid]).decode()} for kid in kids]})


@pytest.fixture(scope="module")
def keyed_herald():
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "keys.json")
    with open(path, "w") as f:
        f.write(key_set(["a", "b"]))
    log = tempfile.NamedTemporaryFile()
    process, port = herald_process.start(["--in-memory", "--log-level", "info", "--connections-per-second", "0",
                                          "--writes-per-second", "0", "--jwt-key-file", path], stderr=log)
    try:
        yield port, process, path, log
    finally:
        process.terminate()
        process.wait(timeout=30)


def signed(header_json, secret):
    """A compact JWS with this header, a payload that may do anything for an hour, signed HS256 with `secret`."""
    payload = '{"exp":%d,%s}' % (int(time.time()) + 3600, GRANT)
    signing_input = b64(header_json.encode()) + b"." + b64(payload.encode())
    return (signing_input + b"." + b64(hmac.new(secret, signing_input, hashlib.sha256).digest())).decode()


def answer(port, token):
    """The status and body of a change made with `token` (Connection: close, read to the end)."""
    body = b'{"default":"euro"}'
    request = (f"PUT /currency HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as s:
        s.sendall(request)
        received = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            received += chunk
    assert received.startswith(b"HTTP/1.1 "), received[:200]
    head, _, rest = received.partition(b"\r\n\r\n")
    return int(received[9:12]), head.decode("latin-1"), rest


kids = st.one_of(
    st.sampled_from(["a", "b", "c", "", "A", "a ", "a\u0000", "\u00e9", "keys", "*"]),
    st.text(max_size=40),
    st.text(min_size=200, max_size=300),  # a long one; any longer could make the head too large (431)
)
kid_json = st.one_of(kids.map(json.dumps), st.sampled_from(["1", "null", "true", "[]", '{"kid":"a"}', '["a"]']))


@st.composite
def headers(draw):
    members = ['"alg":"HS256"']
    if draw(st.integers(0, 9)) > 0:
        members.append('"kid":' + draw(kid_json))
    return "{" + ",".join(draw(st.permutations(members))) + "}"


@settings(max_examples=BUDGET, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(header=headers(), signer=st.sampled_from(["a", "b"]))
@example(header='{"alg":"HS256","kid":"a"}', signer="a")
@example(header='{"alg":"HS256","kid":"a"}', signer="b")
@example(header='{"alg":"HS256","kid":"c"}', signer="a")
@example(header='{"alg":"HS256"}', signer="a")
@example(header='{"alg":"HS256","kid":1}', signer="a")
def test_only_the_key_a_kid_names_checks_a_token(keyed_herald, header, signer):
    port, process, _, _ = keyed_herald
    status, head, body = answer(port, signed(header, SECRETS[signer]))
    assert process.poll() is None, f"herald died on {header!r}"
    named = json.loads(header).get("kid")
    if named == signer:
        assert status == 200, f"{status} {body[:300]!r} for {header!r} signed with {signer}"
    else:
        assert status == 401, f"{status} {body[:300]!r} for {header!r} signed with {signer}"
        assert "application/problem+json" in head
        assert json.loads(body)["detail"], body


def test_a_huge_key_file_is_refused_at_start_without_being_read_whole():
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "keys.json")
        with open(path, "wb") as f:
            f.truncate(2 << 30)  # 2 GiB of zeros, sparse: reading it whole would take 2 GiB
        result = subprocess.run([herald_process.binary(), "--port", str(herald_process.free_port()), "--in-memory",
                                 "--jwt-key-file", path], capture_output=True, timeout=600)
        assert result.returncode != 0
        assert b"longer than 1048576 bytes" in result.stderr, result.stderr[-2000:]
        # Not read whole: no child of this process (this herald, or any waited for before) held 1 GiB.
        assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 1024 * 1024


def test_a_reload_of_a_huge_or_broken_key_file_keeps_the_keys(keyed_herald):
    port, process, path, log = keyed_herald
    good = signed('{"alg":"HS256","kid":"a"}', SECRETS["a"])
    assert answer(port, good)[0] == 200
    with open(path, "rb") as f:
        original = f.read()
    try:
        for broken, reason in ((None, b"longer than 1048576 bytes"), (b'{"keys":[' + b"1," * 100 + b"1]}", b"at most 64")):
            with open(path, "wb") as f:
                if broken is None:
                    f.truncate(2 << 30)
                else:
                    f.write(broken)
            process.send_signal(signal.SIGHUP)
            deadline = time.time() + 120
            while reason not in open(log.name, "rb").read() and time.time() < deadline:
                time.sleep(0.1)
            assert reason in open(log.name, "rb").read(), open(log.name, "rb").read()[-2000:]
            assert process.poll() is None
            assert answer(port, good)[0] == 200, "the keys Herald had are kept"
        rss = int(next(line for line in open(f"/proc/{process.pid}/status") if line.startswith("VmRSS:")).split()[1])
        assert rss < 512 * 1024, f"{rss} KiB resident after a reload of a 2 GiB file"
    finally:
        with open(path, "wb") as f:
            f.write(original)
