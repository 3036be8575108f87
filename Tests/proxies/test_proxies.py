"""The repo's proxy configurations (deploy/nginx/nginx.conf, deploy/haproxy/haproxy.cfg) in front of a
Herald on loopback with its default options, as the docs advise: requests are answered (not 421),
streams carry events, and (HAProxy) an observer leaves soon after its client closed."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

import herald_process

ROOT = herald_process.ROOT


@pytest.fixture(scope="module")
def herald():
    process, port = herald_process.start(["--in-memory", "--no-examples"])
    yield port
    process.terminate()
    process.wait(timeout=20)


def wait_for(port, timeout=15):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port}")


def nginx_config(herald, caching=False):
    """deploy/nginx/nginx.conf with its upstreams pointed at the Herald, on a free port, without TLS;
    with `caching`, a proxy_cache that keeps every 200 for minutes whatever Herald's Cache-Control says
    (a cache set up to keep what it can), so that only Vary keeps languages apart."""
    text = open(os.path.join(ROOT, "deploy/nginx/nginx.conf")).read()
    port = herald_process.free_port()
    folder = tempfile.mkdtemp(prefix="herald-nginx-")
    text = re.sub(r"server herald-1:8080[^;]*;", f"server 127.0.0.1:{herald};", text)
    text = re.sub(r"\s*server herald-[23]:8080[^;]*;", "", text)
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{port};").replace("pid /run/nginx.pid;", f"pid {folder}/nginx.pid;")
    text = re.sub(r"\s*listen 8443[^;]*;", "", text)
    text = re.sub(r"\s*ssl_[a-z_]+ [^;]*;", "", text)
    text = text.replace("worker_processes auto;", "worker_processes 1;")
    if caching:
        # nginx's workers (nobody, when run as root) write the cache.
        os.makedirs(f"{folder}/cache")
        os.chmod(folder, 0o755)
        os.chmod(f"{folder}/cache", 0o777)
        text = text.replace("  upstream herald {", f"  proxy_cache_path {folder}/cache keys_zone=herald:1m;\n  upstream herald {{")
        text = text.replace("      proxy_pass http://herald;", "      proxy_pass http://herald;\n      proxy_cache herald;\n"
                            "      proxy_ignore_headers Cache-Control;\n      proxy_cache_valid 200 10m;")
    return text, port, folder


def run_nginx(text, port, folder):
    config = os.path.join(folder, "nginx.conf")
    open(config, "w").write(text)
    process = subprocess.Popen(["nginx", "-c", config, "-p", folder, "-e", "stderr", "-g", "daemon off;"], stderr=subprocess.PIPE)
    wait_for(port)
    return process


def nginx_running(herald, caching):
    text, port, folder = nginx_config(herald, caching)
    process = run_nginx(text, port, folder)
    yield port
    process.terminate()
    process.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def nginx(herald):
    yield from nginx_running(herald, caching=False)


@pytest.fixture
def caching_nginx(herald):
    yield from nginx_running(herald, caching=True)


@pytest.fixture
def haproxy(herald):
    """deploy/haproxy/haproxy.cfg with one replica, the Herald, on a free port."""
    text = open(os.path.join(ROOT, "deploy/haproxy/haproxy.cfg")).read()
    port = herald_process.free_port()
    text = text.replace("server herald-1 herald-1:8080", f"server herald-1 127.0.0.1:{herald}")
    text = re.sub(r"\s*server herald-[23] [^\n]*", "", text)
    text = text.replace("bind :8080", f"bind 127.0.0.1:{port}")
    folder = tempfile.mkdtemp(prefix="herald-haproxy-")
    config = os.path.join(folder, "haproxy.cfg")
    open(config, "w").write(text)
    check = subprocess.run(["haproxy", "-c", "-f", config], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    process = subprocess.Popen(["haproxy", "-db", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(port)
    yield port
    process.terminate()
    process.wait(timeout=10)
    shutil.rmtree(folder, ignore_errors=True)


def request(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def stream(port, path):
    """A raw stream through the proxy: the socket, once the head is in."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    received = b""
    while b"\r\n\r\n" not in received:
        received += s.recv(4096)
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
    return s, received


def read_until(s, received, needle, timeout=10):
    s.settimeout(timeout)
    while needle not in received:
        chunk = s.recv(4096)
        assert chunk, f"the stream ended before {needle!r}: {received[-300:]!r}"
        received += chunk
    return received


def check_requests_and_streams(port):
    status, body = request(port, "GET", "/currency")
    assert status == 200, f"{status} {body[:300]!r}"
    assert request(port, "PUT", "/units/proxied", {"name": "P", "status": "healthy"})[0] in (200, 201)
    s, received = stream(port, "/notifications/proxied/events")
    received = read_until(s, received, b"event: ready")
    assert request(port, "POST", "/notifications/proxied", {"userInfo": {"n": 1}})[0] == 202
    received = read_until(s, received, b"event: notification")
    s.close()


def test_nginx_in_front_of_a_loopback_herald(nginx):
    check_requests_and_streams(nginx)


def test_haproxy_in_front_of_a_loopback_herald(haproxy, herald):
    check_requests_and_streams(haproxy)
    # A client that closes its stream: its observer leaves soon (`option abortonclose`: without it the
    # observer stayed until a heartbeat failed, 20 s and more later).
    s, received = stream(haproxy, "/notifications/leaving/events")
    read_until(s, received, b"event: ready")
    def observers():
        subjects = json.loads(request(herald, "GET", "/subjects")[1])["subjects"]
        return sum(subject["observers"] for subject in subjects if subject["topic"] == "notifications/leaving")
    assert observers() == 1
    s.close()
    deadline = time.time() + 5
    while observers() and time.time() < deadline:
        time.sleep(0.1)
    assert observers() == 0, "the observer of a closed client left within 5 s"


def test_a_cache_in_front_keeps_languages_apart(caching_nginx, herald):
    """A trip read in German through a cache, then in English: the English reader gets English."""
    status, body = request(herald, "POST", "/trips", {"departure": "2015-10-09T13:09:53Z", "arrival": "2015-10-09T13:26:33Z"})
    trip = json.loads(body)["id"]
    def get(language):
        req = urllib.request.Request(f"http://127.0.0.1:{caching_nginx}/trips/{trip}", headers={"Accept-Language": language})
        with urllib.request.urlopen(req, timeout=10) as answer:
            return answer.read()
    german, again = get("de-DE"), get("de-DE")
    english = get("en-US")
    direct = urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{herald}/trips/{trip}", headers={"Accept-Language": "en-US"}),
                                    timeout=10).read()
    assert german == again and german != english, "the cache keeps one copy per language"
    assert english == direct, f"the English reader got {english[:200]!r}"
