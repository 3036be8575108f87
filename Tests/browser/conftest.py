"""Fixtures for the browser tests: a real herald on 127.0.0.1 and headless Chromium sessions."""
import json
import os
import shutil
import signal
import tempfile
import urllib.request

import herald_process
import pytest
from selenium import webdriver

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ARTIFACTS = os.path.join(ROOT, ".artifacts")


class Herald:
    """`herald` as a child process on a data directory, so it can be restarted with its state."""

    def __init__(self, arguments=()):
        self.arguments = list(arguments)
        self.port = herald_process.free_port()
        self.data = tempfile.mkdtemp(prefix="herald-browser-")
        self.process = None

    @property
    def origin(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.process, _ = herald_process.start(["--data-dir", self.data, "--log-level", "warning"] + self.arguments, port=self.port)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=15)

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.origin + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"} if body is not None else {})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read() or b"null")


def serving(arguments=()):
    """A started Herald for a fixture to yield from: stopped, and its data removed, afterwards."""
    server = Herald(arguments)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.data, ignore_errors=True)


@pytest.fixture(scope="session")
def herald():
    yield from serving()


def make_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,1100", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(options=options, service=service)


@pytest.fixture(scope="session")
def browsers(herald):
    os.makedirs(ARTIFACTS, exist_ok=True)
    sessions = [make_browser(), make_browser()]
    yield sessions
    for index, browser in enumerate(sessions):
        browser.save_screenshot(os.path.join(ARTIFACTS, f"session-{index + 1}.png"))
        browser.quit()
