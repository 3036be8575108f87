"""Herald's browser module (/herald.js) in headless Chromium: one stream for every tab of a browser,
a leader tab whose close loses nothing, and a token renewed on an open stream.

Tabs that share the stream are windows of one WebDriver session (one profile, one origin), where the
Web Locks API and BroadcastChannel reach each other."""
import json
import subprocess
import time
import urllib.request

import herald_process
import pytest
from selenium.webdriver.common.by import By

from conftest import make_browser, serving
from test_live_page import connected, wait

SECRET = "browser-module-secret-0123456789abcdef"


def metric(server, name):
    """The metric's value, summed over its labels (0 when it has no line yet)."""
    with urllib.request.urlopen(server.origin + "/metrics", timeout=5) as response:
        lines = response.read().decode().splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(name + " ") or line.startswith(name + "{"))


def notify(server, number):
    server.request("POST", "/notifications/hello", {"userInfo": {"n": number}})


def notifications(browser):
    """The numbers of the notifications the page's log shows, oldest first."""
    codes = browser.find_elements(By.CSS_SELECTOR, "#notification-log code")
    return [json.loads(code.text).get("n") for code in reversed(codes)]


def role(browser):
    return browser.find_element(By.ID, "connection").get_attribute("data-leader")


@pytest.fixture(scope="module")
def server():
    yield from serving()


@pytest.fixture(scope="module")
def tabs(server):
    browser = make_browser()
    handles = []
    for index in range(8):
        if index:
            browser.switch_to.new_window("tab")
        browser.get(server.origin + "/")
        handles.append(browser.current_window_handle)
    for handle in handles:
        browser.switch_to.window(handle)
        wait(browser, lambda: connected(browser), 30, "every tab connects")
    yield browser, handles
    browser.quit()


def test_eight_tabs_hold_one_stream(server, tabs):
    browser, handles = tabs
    wait(browser, lambda: metric(server, "herald_streams_open") == 1, 30,
         f"8 tabs, 1 stream (open streams: {metric(server, 'herald_streams_open')})")
    leaders = []
    for handle in handles:
        browser.switch_to.window(handle)
        leaders.append(role(browser))
    assert leaders.count("true") == 1, leaders
    # Every tab has the state its snapshots gave it, through the one stream.
    for handle in handles:
        browser.switch_to.window(handle)
        wait(browser, lambda: browser.find_element(By.ID, "auction-item-name").text not in ("", "—"), 20, "the auction shows")
        assert browser.find_element(By.ID, "connection").get_attribute("data-transport") in ("eventsource", "shared")


def test_closing_the_leader_tab_loses_no_event(server, tabs):
    browser, handles = tabs
    for number in range(1, 6):
        notify(server, number)
    leader = None
    for handle in handles:
        browser.switch_to.window(handle)
        if role(browser) == "true":
            leader = handle
    assert leader is not None
    followers = [handle for handle in handles if handle != leader]
    for handle in followers:
        browser.switch_to.window(handle)
        wait(browser, lambda: notifications(browser)[-1:] == [5], 20, "every tab has the first five")
    browser.switch_to.window(leader)
    browser.close()
    # Events published while the lock passes to another tab, and after.
    for number in range(6, 16):
        notify(server, number)
        time.sleep(0.05)
    for handle in followers:
        browser.switch_to.window(handle)
        wait(browser, lambda: notifications(browser)[-1:] == [15], 30, f"the tab sees the last ({notifications(browser)})")
        seen = notifications(browser)
        assert seen == list(range(1, 16)), f"each notification once, in order: {seen}"
    leaders = []
    for handle in followers:
        browser.switch_to.window(handle)
        leaders.append(role(browser))
    assert leaders.count("true") == 1, leaders
    wait(browser, lambda: metric(server, "herald_streams_open") == 1, 30, "still one stream")


@pytest.fixture(scope="module")
def secured():
    # Tokens warn 15 s before their end: a 20 s token is warned 5 s after it is made, time enough for
    # the page to connect with it and be given a fresh one on a busy machine.
    yield from serving(["--jwt-key", SECRET, "--token-warning-seconds", "15"])


def token(*arguments):
    return subprocess.run([herald_process.binary(), "token", "--key", SECRET, "--sub", "ann", "--subscribe", "*",
                           "--publish", "*", *arguments], check=True, capture_output=True, text=True).stdout.strip()


def test_a_token_that_expires_is_renewed_without_the_stream_closing(secured):
    browser = make_browser()
    try:
        browser.get(secured.origin + "/")
        issued = time.time()
        short = token("--ttl", "20")
        browser.find_element(By.ID, "token").send_keys(short)
        browser.find_element(By.ID, "token-form").submit()
        wait(browser, lambda: connected(browser), 30, "the page connects with its token")
        closed_before = metric(secured, "herald_streams_closed_total")
        # A fresh token in the field: the module renews with it when the stream is warned.
        fresh = token("--ttl", "1h")
        browser.execute_script("document.getElementById('token').value = arguments[0]", fresh)
        # Past the first token's end (20 s): the stream is the same one, and it still delivers.
        time.sleep(max(0, 22 - (time.time() - issued)))
        request = urllib.request.Request(secured.origin + "/notifications/hello", method="POST",
                                         data=json.dumps({"userInfo": {"n": 99}}).encode(),
                                         headers={"Content-Type": "application/json", "Authorization": f"Bearer {fresh}"})
        urllib.request.urlopen(request, timeout=5)
        wait(browser, lambda: 99 in notifications(browser), 20, "the renewed stream delivers")
        assert metric(secured, "herald_streams_closed_total") == closed_before, "no stream closed: renewed, not reconnected"
        assert metric(secured, "herald_streams_open") == 1
        assert connected(browser)
    finally:
        browser.quit()


class BufferingProxy:
    """A proxy that holds every stream back (as a buffering proxy does: no byte of /events ever comes)
    and passes every other request through to Herald. With `head`, it sends a stream's head at once
    and holds its body (as antivirus and corporate proxies do)."""

    def __init__(self, target, head=False):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def do_GET(self):
                if self.path.startswith("/events"):
                    if head:
                        self.send_response(200)
                        self.send_header("Content-Type", "text/event-stream")
                        self.send_header("Cache-Control", "no-store")
                        self.send_header("Access-Control-Allow-Origin", "*")
                        self.end_headers()
                        self.wfile.flush()
                    time.sleep(60)  # no byte of the body, until the client gives up
                    return
                request = urllib.request.Request(target + self.path, headers={"Origin": self.headers.get("Origin", "")})
                try:
                    with urllib.request.urlopen(request, timeout=40) as response:
                        status, headers, body = response.status, response.headers, response.read()
                except urllib.error.HTTPError as error:
                    status, headers, body = error.code, error.headers, error.read()
                try:
                    self.send_response(status)
                    for name in ("Content-Type", "Access-Control-Allow-Origin", "Access-Control-Expose-Headers"):
                        if headers.get(name):
                            self.send_header(name, headers[name])
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the browser went away (the test ended) while a poll was held

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def test_behind_a_proxy_that_holds_streams_back_the_module_long_polls(server):
    proxy = BufferingProxy(server.origin)
    browser = make_browser()
    try:
        browser.get(server.origin + "/health")  # a page of Herald's origin: JSON is shown, not downloaded
        start = server_last_id(server)
        # A page on Herald's origin that reaches Herald through the proxy; heartbeats of 1 s, so the
        # module gives up on the stream after 2 s without a byte.
        browser.execute_script("""
            window.seen = [];
            import(arguments[2]).then(({ Herald }) => {
              const h = new Herald({ url: arguments[0], share: false, heartbeatSeconds: 1 });
              window.moduleHerald = h;
              h.subscribe(["notifications/poll"], (event) => window.seen.push(event), { after: arguments[1] });
            });
        """, proxy.origin, start, server.origin + "/herald.js")
        wait(browser, lambda: browser.execute_script("return window.moduleHerald && window.moduleHerald.transport") == "long-poll",
             30, "the module falls back to long-polling")
        for number in range(1, 4):
            server.request("POST", "/notifications/poll", {"userInfo": {"n": number}})
        wait(browser, lambda: browser.execute_script("return window.seen.length") == 3, 30, "the events come through /changes")
        seen = browser.execute_script("return window.seen.map((e) => [e.event, e.data.userInfo.n])")
        assert seen == [["notification", 1], ["notification", 2], ["notification", 3]], seen
    finally:
        browser.quit()
        proxy.stop()


def server_last_id(server):
    with urllib.request.urlopen(server.origin + "/currency", timeout=5) as response:
        return response.headers["Herald-Event-ID"]


def module_page(browser, origin, script, *arguments):
    """Runs `script` on a page of Herald's origin with the module imported as `Herald` (arguments[0])."""
    browser.get(origin + "/health")  # a page of Herald's origin: JSON is shown, not downloaded
    browser.execute_script("""
        window.seen = []; window.errors = [];
        const run = new Function("Herald", "args", arguments[1]);
        import(arguments[0]).then(({ Herald }) => run(Herald, Array.from(arguments).slice(2)));
    """, origin + "/herald.js", script, *arguments)


def test_behind_a_proxy_that_passes_the_head_and_holds_the_body_the_module_long_polls(server):
    proxy = BufferingProxy(server.origin, head=True)
    browser = make_browser()
    try:
        module_page(browser, server.origin, """
            const h = new Herald({ url: args[0], share: false, heartbeatSeconds: 1 });
            window.moduleHerald = h;
            h.subscribe(["notifications/held"], (event) => window.seen.push(event), { after: args[1] });
        """, proxy.origin, server_last_id(server))
        wait(browser, lambda: browser.execute_script("return window.moduleHerald && window.moduleHerald.transport") == "long-poll",
             30, "the module falls back to long-polling though the head came")
        server.request("POST", "/notifications/held", {"userInfo": {"n": 1}})
        wait(browser, lambda: browser.execute_script("return window.seen.length") == 1, 30, "the event comes through /changes")
    finally:
        browser.quit()
        proxy.stop()


def test_long_polling_from_no_position_starts_with_the_snapshots_and_misses_nothing(server):
    server.request("PUT", "/currency", {"default": "euro"})
    browser = make_browser()
    try:
        module_page(browser, server.origin, """
            const h = new Herald({ url: args[0], share: false, transport: "long-poll" });
            window.moduleHerald = h;
            h.subscribe(["currency"], (event) => window.seen.push(event));
        """, server.origin)
        wait(browser, lambda: browser.execute_script("return window.seen.length") >= 1, 30, "a first event")
        first = browser.execute_script("return window.seen[0]")
        assert first["event"] == "snapshot" and first["data"]["default"] == "euro", first
        server.request("PUT", "/currency", {"default": "gramGold"})
        wait(browser, lambda: browser.execute_script("return window.seen.length") >= 2, 30, "the change after it")
        second = browser.execute_script("return window.seen[1]")
        assert second["event"] == "currency" and second["data"]["default"] == "gramGold", second
    finally:
        browser.quit()


def test_a_refused_token_is_reported_once_per_streak(secured):
    browser = make_browser()
    try:
        module_page(browser, secured.origin, """
            const h = new Herald({ url: args[0], share: false, token: async () => "not-a-token" });
            h.on("error", (error) => window.errors.push(error.message));
            h.subscribe(["currency"], (event) => window.seen.push(event));
        """, secured.origin)
        # Refusals at about 0, 2, 6 and 14 s: it was reported at the second and at every one after it.
        wait(browser, lambda: browser.execute_script("return window.errors.length") >= 1, 30, "the refusal is reported")
        time.sleep(15)
        errors = browser.execute_script("return window.errors")
        assert len(errors) == 1, errors
    finally:
        browser.quit()


def test_a_stream_an_administrator_ends_is_not_reopened(secured):
    browser = make_browser()
    try:
        fresh = token("--ttl", "1h")
        module_page(browser, secured.origin, """
            const h = new Herald({ url: args[0], share: false, token: async () => args[1] });
            window.states = [];
            h.on("status", (state) => window.states.push(state.connection));
            h.on("error", (error) => window.errors.push(error.message));
            h.subscribe(["currency"], (event) => window.seen.push(event));
        """, secured.origin, fresh)
        wait(browser, lambda: "connected" in browser.execute_script("return window.states || []"), 30, "the module connects")
        admin = token("--admin", "--ttl", "1h")
        listing = json.loads(urllib.request.urlopen(urllib.request.Request(
            secured.origin + "/streams?topic=currency", headers={"Authorization": f"Bearer {admin}"}), timeout=5).read())
        assert len(listing["streams"]) == 1, listing
        urllib.request.urlopen(urllib.request.Request(secured.origin + "/streams/" + listing["streams"][0]["stream"], method="DELETE",
                                                      headers={"Authorization": f"Bearer {admin}"}), timeout=5)
        wait(browser, lambda: browser.execute_script("return window.errors.length") >= 1, 20, "the end is reported")
        assert "administrator" in browser.execute_script("return window.errors[0]")
        assert browser.execute_script("return window.states.at(-1)") == "ended"
        # EventSource would reconnect on its own within seconds: the module does not.
        time.sleep(6)
        assert metric(secured, "herald_streams_open") == 0
        assert browser.execute_script("return window.states.at(-1)") == "ended"
    finally:
        browser.quit()
