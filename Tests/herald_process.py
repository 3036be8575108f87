"""A `herald` for the Python tests: the build in HERALD_BINARY (or the debug build) on a free port of
127.0.0.1, started and waited for until it answers."""
import contextlib
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary():
    return os.environ.get("HERALD_BINARY", os.path.join(ROOT, ".build", "debug", "herald"))


def start(arguments, port=None, stderr=subprocess.DEVNULL, timeout=15):
    """Starts herald with `arguments` and returns (process, port) once `/health/live` answers; kills it
    and raises if it does not within `timeout` seconds."""
    port = port or free_port()
    process = subprocess.Popen([binary(), "--port", str(port)] + list(arguments), stdout=subprocess.DEVNULL, stderr=stderr)
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health/live", timeout=1)
            return process, port
        except OSError:
            if process.poll() is not None:
                break
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"herald did not start (exit {process.poll()})")


@contextlib.contextmanager
def watched(arguments, name):
    """Runs herald with `arguments` for a fuzzer and yields (port, process); afterwards stops it and fails
    when it did not exit 0 or its log (kept in a temporary file) shows a sanitizer report or a fatal error."""
    log = tempfile.NamedTemporaryFile(prefix=f"herald-{name}-", suffix=".log", delete=False)
    process, port = start(arguments, stderr=log, timeout=30)
    try:
        yield port, process
    finally:
        process.terminate()
        code = process.wait(timeout=20)
        log.close()
        text = open(log.name, errors="replace").read()
        os.unlink(log.name)
    assert "AddressSanitizer" not in text and "Fatal error" not in text, text[-4000:]
    assert code == 0, f"herald exited {code} after the {name}: {text[-4000:]}"
