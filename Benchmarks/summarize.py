#!/usr/bin/env python3
"""Summarizes .build/bench-results: median and spread (min–max) of each figure over the runs."""
import glob, json, os, re, statistics, sys

out = sys.argv[1] if len(sys.argv) > 1 else ".build/bench-results"

def figures(pattern, extract):
    values = []
    for path in sorted(glob.glob(os.path.join(out, pattern))):
        with open(path) as f:
            values.append(extract(f.read()))
    return values

def line(name, values, unit=""):
    if not values:
        return
    values = [v for v in values if v is not None]
    print(f"| {name} | {statistics.median(values):g}{unit} | {min(values):g}–{max(values):g}{unit} | {len(values)} |")

def js(key_path):
    def get(text):
        value = json.loads(text)
        for key in key_path.split("."):
            value = value[key]
        return value
    return get

def wrk_rps(text):
    match = re.search(r"Requests/sec:\s+([\d.]+)", text)
    return round(float(match.group(1))) if match else None

def wrk_errors(text):
    match = re.search(r"non-2xx or errors: (\d+)", text)
    return int(match.group(1)) if match else 0

print("| figure | median | spread | runs |")
print("| --- | --- | --- | --- |")
line("burst: subscribers connected (of 10,000)", figures("burst-*.json", js("subscribers.connected")))
line("burst: events lost + duplicated + out of order", figures("burst-*.json", lambda t: sum(json.loads(t)["events"][k] for k in ("lost", "duplicated", "outOfOrder"))))
line("burst: whole burst delivered (s)", figures("burst-*.json", lambda t: round(json.loads(t)["burstSeconds"], 2)))
line("burst: server CPU per delivered event (µs)", figures("burst-*.json", js("serverCpuMicrosecondsPerDeliveredEvent")))
line("burst: publish→receive p99 (ms)", figures("burst-*.json", js("latencyMilliseconds.p99")))
line("burst: RSS per subscriber at 10,000 (KiB)", figures("burst-*.json", js("server.rssKiBPerSubscriber")))
line("steady 5/s: publish→receive p50 (ms)", figures("steady-*.json", js("latencyMilliseconds.p50")))
line("steady 5/s: publish→receive p99 (ms)", figures("steady-*.json", js("latencyMilliseconds.p99")))
line("steady 5/s: events lost", figures("steady-*.json", js("events.lost")))
line("steady 5/s: server CPU per delivered event (µs)", figures("steady-*.json", js("serverCpuMicrosecondsPerDeliveredEvent")))
line("bid answer p99, 10,000 watching (ms)", figures("steady-*.json", js("bidResponseMilliseconds.p99")))
line("bid answer p50, 10,000 watching (ms)", figures("steady-*.json", js("bidResponseMilliseconds.p50")))
line("bid answer p99, nobody watching (ms)", figures("alone-*.json", js("bidResponseMilliseconds.p99")))
line("bid answer p50, nobody watching (ms)", figures("alone-*.json", js("bidResponseMilliseconds.p50")))
line("pipelined: bids answered (of 3,000)", figures("pipelined-*.json", js("bids.answered")))
line("pipelined: events received (of 3,000,000)", figures("pipelined-*.json", js("events.received")))
line("pipelined: events lost + duplicated + out of order", figures("pipelined-*.json", lambda t: sum(json.loads(t)["events"][k] for k in ("lost", "duplicated", "outOfOrder"))))
line("pipelined: server CPU per delivered event (µs)", figures("pipelined-*.json", js("serverCpuMicrosecondsPerDeliveredEvent")))
line("pipelined: last event received after the first bid (s)", figures("pipelined-*.json", lambda t: round(json.loads(t)["burstSeconds"], 2)))
line("10,000 idle: CPU with heartbeats every 15 s (% of a core)", figures("idle-*.json", lambda t: round(json.loads(t)["server"]["idleCpuFractionOfCore"] * 100, 2)))
line("10,000 idle: RSS per subscriber (KiB)", figures("idle-*.json", js("server.rssKiBPerSubscriber")))
line("19,000 held: subscribers connected", figures("hold-*.json", js("subscribers.connected")))
line("19,000 held: RSS per subscriber (KiB)", figures("hold-*.json", js("server.rssKiBPerSubscriber")))
line("19,000 held: idle CPU, heartbeats on (% of a core)", figures("hold-*.json", lambda t: round(json.loads(t)["server"]["idleCpuFractionOfCore"] * 100, 2)))
line("19,000 held: server threads", figures("hold-*.json", js("server.threads")))
herald = figures("get-herald-*.txt", wrk_rps)
hello = figures("get-hello-*.txt", wrk_rps)
line("GET /auctions/1: Herald (req/s)", herald)
line("GET: libmicrohttpd hello-world (req/s)", hello)
if herald and hello:
    line("GET: Herald ÷ hello-world", [round(h / w, 2) for h, w in zip(herald, hello)])
bids = figures("bids-*.txt", wrk_rps)
line("POST bids, 1,000 watching (req/s)", bids)
line("POST bids: refused as too low (non-2xx)", figures("bids-*.txt", wrk_errors))
line("POST bids: events the watchers received", figures("bids-watchers-*.json", js("events.received")))
rounds = []
for path in sorted(glob.glob(os.path.join(out, "rounds-*.jsonl"))):
    with open(path) as f:
        rounds.append([json.loads(l) for l in f if l.strip()])
line("vanish: seconds until 0 observers (worst round)", [max(r["secondsToZero"] for r in run if r["round"] > 0) for run in rounds])
line("5 rounds: RSS at the start (KiB)", [run[0]["rssKiB"] for run in rounds if run[0]["round"] == 0])
line("5 rounds: RSS after round 1 (KiB)", [next(r["rssKiB"] for r in run if r["round"] == 1) for run in rounds])
line("5 rounds: RSS after round 5 (KiB)", [run[-1]["rssKiB"] for run in rounds])
for via, name in (("own", "own addresses"), ("proxy", "one trusted proxy")):
    pattern = f"storm-{via}-*.json"
    line(f"storm ({name}): clients refused", figures(pattern, lambda t: sum(json.loads(t)["refused"].values())))
    line(f"storm ({name}): bids lost + duplicated + out of order + resyncs (of 1,000,000)",
         figures(pattern, lambda t: sum(json.loads(t)["events"][k] for k in ("lost", "duplicated", "outOfOrder", "resyncs", "snapshotsOnResume"))))
    line(f"storm ({name}): restart to the last client caught up (s)", figures(pattern, lambda t: round(json.loads(t)["seconds"]["restartToLastCaughtUp"], 2)))
    line(f"storm ({name}): server CPU per new subscriber (µs)", figures(pattern, js("server.cpuMicrosecondsPerNewSubscriber")))
    line(f"storm ({name}): server CPU per resumed subscriber (µs)", figures(pattern, js("server.cpuMicrosecondsPerResumedSubscriber")))
    line(f"storm ({name}): resumed ÷ new", figures(pattern, js("server.resumedOverNew")))
    line(f"storm ({name}): countdown ticks sent while resuming (to clients back)", figures(pattern, js("events.ticksWhileResuming")))
    line(f"storm ({name}): server CPU per tick sent, after the storm (µs)", figures(pattern, js("server.cpuMicrosecondsPerTickSent")))
    line(f"storm ({name}): resumed without the ticks ÷ new", figures(pattern, js("server.resumedWithoutTicksOverNew")))
