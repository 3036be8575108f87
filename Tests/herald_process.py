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


def start(arguments, port=None, stderr=None, timeout=15, tries=3):
    """Starts herald with `arguments` and returns (process, port) once `/health/live` answers; kills it
    and raises, with the end of its log, if it does not within `timeout` seconds. Its log goes to
    `stderr` (a file) or to a temporary file. A free port can be taken by another process between
    `free_port()` and herald's listening (the suites run side by side): when herald says it cannot
    listen, and the caller named no port, it starts again on another, up to `tries` times."""
    for _ in range(1 if port else tries):
        chosen = port or free_port()
        log = stderr if stderr is not None else tempfile.TemporaryFile()
        process = subprocess.Popen([binary(), "--port", str(chosen)] + list(arguments), stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{chosen}/health/live", timeout=1)
                if stderr is None:
                    log.close()  # herald keeps writing to its own descriptor of the file
                return process, chosen
            except OSError:
                if process.poll() is not None:
                    break
                time.sleep(0.1)
        process.kill()
        code = process.wait()
        text = _read(log)
        if stderr is None:
            log.close()
        if "cannot listen on" in text and not port:
            continue
        raise RuntimeError(f"herald did not start (exit {code}): {text[-2000:]}")
    raise RuntimeError(f"herald did not start: {tries} free ports were taken before it could listen")


def _read(log):
    """What herald wrote to `log` so far: a file of ours, or one the caller named."""
    try:
        log.flush()
        with open(log.name if isinstance(log.name, str) else f"/proc/self/fd/{log.fileno()}", "rb") as f:
            return f.read().decode(errors="replace")
    except (AttributeError, OSError, ValueError):
        return ""


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
