#!/usr/bin/env python3
"""The figures of docs/performance.md from Benchmarks/run's results: a Markdown table of medians with
their spread (min–max over the runs), and the pictures (docs/performance/*.svg), drawn from the same
numbers. Scenarios without results are left out.
    python3 Benchmarks/report.py [results]      (default .build/bench-results)"""
import glob
import json
import os
import re
import statistics
import sys

results = sys.argv[1] if len(sys.argv) > 1 else ".build/bench-results"
pictures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "performance")


def runs(scenario, name):
    """Every run's report for `name` (`herald-10000`): the files name-1.json, name-2.json, …"""
    paths = sorted(glob.glob(os.path.join(results, scenario, f"{name}-[0-9]*.json")))
    found = []
    for path in paths:
        if not re.fullmatch(re.escape(name) + r"-\d+\.json", os.path.basename(path)):
            continue
        try:
            found.append(json.load(open(path)))
        except ValueError:
            print(f"left out {path}: not a whole report (a run that failed, or one still going)", file=sys.stderr)
    return found


def spread(values, digits=0, unit=""):
    if not values:
        return "–"
    f = lambda v: f"{v:,.{digits}f}"
    if len(values) == 1:
        return f"{f(values[0])}{unit}"
    return f"{f(statistics.median(values))}{unit} ({f(min(values))}–{f(max(values))})"


def median(values):
    return statistics.median(values) if values else float("nan")


def sound(reports):
    """Whether every event reached every subscriber once and in order, in every run."""
    return all(sum(r["events"].get(k, 0) for k in ("lost", "duplicated", "outOfOrder")) == 0 for r in reports)


rows = []


def row(figure, herald, peer, ratio, scenario):
    rows.append(f"| {figure} | {herald} | {peer} | {ratio} | `Benchmarks/run {scenario}` |")


sizes = [1000, 2500, 5000, 10000]
fanout = {(kind, n): runs("fanout", f"{kind}-{n}") for kind in ("herald", "nchan") for n in sizes}
if fanout[("herald", 10000)]:
    h, n = fanout[("herald", 10000)], fanout[("nchan", 10000)]
    rate = lambda rs: [r["deliveredPerSecond"] for r in rs]
    cpu = lambda rs: [r["serverCpuMicrosecondsPerDeliveredEvent"] for r in rs]
    row("fan-out to 10,000 subscribers, 50 bids 20 ms apart: delivered events/s", spread(rate(h)), spread(rate(n)),
        f"{median(rate(h)) / median(rate(n)):.1f}×", "fanout")
    row("the same: server CPU per delivered event", spread(cpu(h), 1, " µs"), spread(cpu(n), 1, " µs"),
        f"{median(cpu(h)) / median(cpu(n)):.2f}×", "fanout")
    if not (sound(h) and sound(n)):
        print("warning: a fan-out run lost, repeated or reordered events", file=sys.stderr)

latency = {kind: runs("latency", kind) for kind in ("floor", "nchan", "herald")}
if latency["herald"]:
    p = lambda kind, q: [r["latencyMilliseconds"][q] for r in latency[kind]]
    row("5 bids a second to 10,000 subscribers: publish→receive p99", spread(p("herald", "p99"), 0, " ms"),
        f"nchan {spread(p('nchan', 'p99'), 0, ' ms')}; the floor {spread(p('floor', 'p99'), 0, ' ms')}",
        f"{median(p('herald', 'p99')) / median(p('nchan', 'p99')):.2f}× nchan, {median(p('herald', 'p99')) / median(p('floor', 'p99')):.2f}× the floor",
        "latency")
    c = lambda kind: [r["serverCpuMicrosecondsPerDeliveredEvent"] for r in latency[kind]]
    # The countdown's ticks, which the floor and nchan do not send, as the bench counted them.
    counted = all("ticks" in r["events"] for r in latency["herald"])
    ticks = sum(r["events"].get("ticks", 0) for r in latency["herald"])
    told = "" if not counted else " (no countdown tick went out: a bid every 200 ms restarts it)" if ticks == 0 else f" ({ticks:,} countdown ticks included)"
    row(f"the same: server CPU per delivered event{told}", spread(c("herald"), 1, " µs"),
        f"nchan {spread(c('nchan'), 1, ' µs')}; the floor {spread(c('floor'), 1, ' µs')}",
        f"{median(c('herald')) / median(c('nchan')):.2f}× nchan, {median(c('herald')) / median(c('floor')):.2f}× the floor", "latency")
    two = [r["latencyMilliseconds"]["p99"] for r in runs("latency", "herald2")]
    if two:
        row("the same, Herald on both cores with two stream loops (the bench sharing them)", spread(two, 0, " ms"), "–",
            f"{median(two) / median(p('nchan', 'p99')):.2f}× nchan on one core", "latency")

memory = {(kind, n): runs("memory", f"{kind}-{n}") for kind in ("herald", "nchan") for n in (2500, 5000, 10000)}
if memory[("herald", 10000)]:
    kib = lambda rs: [r["server"]["rssKiBPerSubscriber"] for r in rs]
    h, n = kib(memory[("herald", 10000)]), kib(memory[("nchan", 10000)])
    row("memory per idle subscriber, at 10,000", spread(h, 2, " KiB"), spread(n, 2, " KiB"), f"{median(h) / median(n):.2f}×", "memory")

arrival = {kind: runs("arrival", kind) for kind in ("herald", "nchan", "herald-resume", "nchan-resume")}
if arrival["herald"]:
    per = lambda rs: [r["server"]["cpuSecondsConnecting"] / max(r["subscribers"]["connected"], 1) * 1e6 for r in rs]
    h, n = per(arrival["herald"]), per(arrival["nchan"])
    row("arriving: server CPU per new subscriber (10,000)", spread(h, 1, " µs"), spread(n, 1, " µs"), f"{median(h) / median(n):.2f}×", "arrival")
    resumed = lambda rs: [r["server"]["cpuMicrosecondsPerResumedSubscriber"] for r in rs]
    h, n = resumed(arrival["herald-resume"]), resumed(arrival["nchan-resume"])
    row("resuming after 100 missed events: server CPU per subscriber", spread(h, 1, " µs"), spread(n, 1, " µs"),
        f"{median(h) / median(n):.2f}×", "arrival")

storm = runs("storm", "herald")
if storm:
    last = [r["seconds"]["restartToLastCaughtUp"] for r in storm]
    wrong = sum(sum(r["events"][k] for k in ("lost", "duplicated", "outOfOrder", "resyncs")) for r in storm)
    row("restart under 10,000 subscribers: restart to the last caught up", spread(last, 2, " s"), "–",
        f"{wrong} events lost, repeated or resynced", "storm")

for path in ("/auctions/1", "/currency", "/units/scout"):
    key = path.replace("/", "_")
    h, hello = runs("reads", f"herald-{key}"), runs("reads", f"hello-{key}")
    if h and hello:
        rps = lambda rs: [r["requestsPerSecond"] for r in rs]
        row(f"GET {path}, 32 connections: requests/s", spread(rps(h)), f"hello-world {spread(rps(hello))}",
            f"{median(rps(h)) / median(rps(hello)):.2f}× the hello-world", "reads")
        cpu = lambda rs: [r["cpuMicrosecondsPerRequest"] for r in rs]
        row(f"the same: server CPU per request", spread(cpu(h), 2, " µs"), f"hello-world {spread(cpu(hello), 2, ' µs')}",
            f"{median(cpu(hello)) / median(cpu(h)):.2f} of the hello-world's rate", "reads")


def wrk(path):
    text = open(path).read()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", text)
    scale = {"us": 0.001, "ms": 1, "s": 1000}
    return rate, float(p99.group(1)) * scale[p99.group(2)] if p99 else float("nan")


for name, figure in (("put-in-memory", "PUT /units, 16 connections, in memory"), ("put-data-dir", "PUT /units, 16 connections, on --data-dir"),
                     ("bid", "bids on one auction while 1,000 watch, 16 connections")):
    paths = sorted(glob.glob(os.path.join(results, "writes", f"{name}-[0-9]*.txt")))
    if paths:
        measured = [wrk(p) for p in paths]
        row(f"{figure}: changes/s; answer p99", f"{spread([m[0] for m in measured])}; {spread([m[1] for m in measured], 1, ' ms')}", "–", "–",
            "writes")

summary = os.path.join(results, "replicas", "summary")
if os.path.exists(summary):
    text = open(summary).read()
    for where, figure in (("same", "bid to event on the replica that took it"), ("across", "bid to event on another replica")):
        p99 = [float(m) for m in re.findall(rf"^{where}\s+received\s+\d+.*?p99\s+([\d.]+)", text, re.M)]
        row(f"PostgreSQL, 1,000 subscribers, 50 bids a second: {figure}, p99", spread(p99, 1, " ms"), "–", "–", "replicas")
    rate = {mode: re.search(rf"^{mode}\s+median\s+([\d,]+) changes/s \(([\d,]+)-([\d,]+)\)", text, re.M) for mode in ("sqlite", "postgres-1", "postgres-3")}
    if all(rate.values()):
        n = lambda mode, i: float(rate[mode].group(i).replace(",", ""))
        show = lambda mode: f"{n(mode, 1):,.0f} ({n(mode, 2):,.0f}–{n(mode, 3):,.0f})"
        row("mixed writes (bids and PUT /units), 48 connections: changes/s, one replica on PostgreSQL", show("postgres-1"),
            f"SQLite --data-dir {show('sqlite')}", f"{n('postgres-1', 1) / n('sqlite', 1):.2f}× SQLite", "replicas")
        row("the same, three replicas on one database", show("postgres-3"), "–", f"{n('postgres-3', 1) / n('postgres-1', 1):.2f}× one replica",
            "replicas")
    bids = [json.loads(line)["answerMilliseconds"]["p99"] for line in text.splitlines() if line.startswith('{"sent"')]
    if bids:
        row("bids at 500 a second over three replicas: answer p99", spread(bids, 1, " ms"), "–", "–", "replicas")
takein = os.path.join(results, "replicas", "takein")
if os.path.exists(takein):
    spent = [float(m) for m in re.findall(r"^round \d+: .*B spent ([\d.]+) µs", open(takein).read(), re.M)]
    row("a replica that only streams, taking in another's changes (2 wrk clients on the other, 10 s): its CPU per change",
        spread(spent, 1, " µs"), "–", "–", "replicas")

for path in ("/auctions/1", "/currency"):
    found = glob.glob(os.path.join(results, "instructions", path.replace("/", "_") + ".json"))
    if found:
        row(f"GET {path}: instructions per request in Herald's callbacks", f"{json.load(open(found[0]))['instructionsPerRequest']:,}",
            "–", "–", "instructions")

print("| figure | Herald | peer | Herald ÷ peer | command |")
print("| --- | --- | --- | --- | --- |")
print("\n".join(rows))
machines = sorted({open(p).read().strip() for p in glob.glob(os.path.join(results, "*", "machine"))})
print("\n" + "\n".join(machines))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("no pictures: matplotlib is missing (apt-get install python3-matplotlib)")
os.makedirs(pictures, exist_ok=True)
plt.rcParams.update({"font.size": 9, "svg.hashsalt": "herald", "svg.fonttype": "none"})
colors = {"herald": "#1f6feb", "nchan": "#8c959f", "floor": "#2da44e"}
labels = {"herald": "Herald", "nchan": "nginx + nchan", "floor": "the floor"}


def save(figure, name):
    figure.tight_layout()
    figure.savefig(os.path.join(pictures, name), metadata={"Date": None})
    plt.close(figure)
    print(f"drew docs/performance/{name}")


if fanout[("herald", 10000)]:
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
    for kind in ("herald", "nchan"):
        xs = [n for n in sizes if fanout[(kind, n)]]
        left.plot(xs, [median([r["deliveredPerSecond"] / 1000 for r in fanout[(kind, n)]]) for n in xs], "o-", color=colors[kind], label=labels[kind])
        right.plot(xs, [median([r["serverCpuMicrosecondsPerDeliveredEvent"] for r in fanout[(kind, n)]]) for n in xs], "o-", color=colors[kind],
                   label=labels[kind])
    left.set(title="delivered events per second (thousands)", xlabel="subscribers", ylim=(0, None))
    right.set(title="server CPU per delivered event (µs)", xlabel="subscribers", ylim=(0, None))
    left.legend()
    save(figure, "fanout.svg")

if latency["herald"]:
    figure, axis = plt.subplots(figsize=(8, 2.8))
    quantiles = ("p50", "p90", "p99")
    for i, kind in enumerate(("floor", "nchan", "herald")):
        values = [median([r["latencyMilliseconds"][q] for r in latency[kind]]) for q in quantiles]
        axis.bar([j * 4 + i for j in range(3)], values, color=colors[kind], label=labels[kind])
    axis.set_xticks([j * 4 + 1 for j in range(3)], quantiles)
    axis.set(title="publish→receive at 5 bids a second to 10,000 subscribers (ms)")
    axis.legend()
    save(figure, "latency.svg")

if memory[("herald", 10000)]:
    figure, axis = plt.subplots(figsize=(8, 2.8))
    for kind in ("herald", "nchan"):
        xs = [n for n in (2500, 5000, 10000) if memory[(kind, n)]]
        axis.plot(xs, [median([r["server"]["rssKiBPerSubscriber"] for r in memory[(kind, n)]]) for n in xs], "o-", color=colors[kind],
                  label=labels[kind])
    axis.set(title="server memory per idle subscriber (KiB)", xlabel="subscribers", ylim=(0, None))
    axis.legend()
    save(figure, "memory.svg")
