"""REDbot (PyPI `redbot`) reads every GET route of a running Herald as a cache and a careful client
would: none of its notes may be a warning or worse (no freshness left to a cache's guess, no
`no-cache` without a validator, no wrong Content-Length). Streams are left out: REDbot reads a body to
its end, and a stream has none."""
import json
import os
import subprocess
import sys

import pytest

import herald_process

ROUTES = ["/", "/app.js", "/app.css", "/herald.js", "/herald.d.ts", "/favicon.svg", "/favicon.ico", "/openapi.yaml",
          "/currency", "/auctions", "/auctions/1", "/auctions/1/bids", "/auctions?status=open", "/trips", "/trips/1",
          "/units", "/units/scout", "/subjects", "/health", "/health/live", "/health/ready", "/metrics",
          "/presence?topic=currency"]


@pytest.fixture(scope="module")
def herald():
    process, port = herald_process.start(["--in-memory"])
    yield port
    process.terminate()
    process.wait(timeout=20)


@pytest.mark.parametrize("route", ROUTES)
def test_redbot_finds_nothing_to_warn_of(herald, route):
    redbot = os.path.join(os.path.dirname(sys.executable), "redbot")
    run = subprocess.run([redbot, "-o", "har", f"http://127.0.0.1:{herald}{route}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    entries = json.loads(run.stdout)["log"]["entries"]
    assert entries and entries[0]["response"]["status"] == 200, f"{route}: {entries[0]['response']['status'] if entries else None}"
    notes = [(note.get("level"), note.get("note_id"), note.get("summary")) for note in entries[0].get("_red_messages", [])]
    bad = [note for note in notes if note[0] not in ("GOOD", "INFO")]
    assert not bad, f"{route}: {bad}"
