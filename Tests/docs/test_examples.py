"""Every fenced shell example of the README and of docs/, run in order against a fresh Herald, as a
reader who copies them would: one shell per document, so a variable an example sets (a token, an
ETag) is there for the next. Output a document shows is compared with what the command printed.

How an example is read:
- Its URLs name 127.0.0.1:8080 or localhost:8080: they go to the Herald this test started.
- `scripts/run ARGS` (re)starts that Herald with ARGS, on the same data, as stopping the first and
  running the line would; `.build/release/herald` is the build under test.
- `curl -N` (a stream) is read for 3 s, then left, as a reader would press Ctrl-C; one sent to the
  background (`&`) for 20 s, while the lines after it use it.
- A comment line right after a command that looks like output (`# {"…`, `# HTTP/1.1 201`,
  `# Name: value`, `# event: x`, `# 412 {…}`) is compared with what the command printed: `…` stands for
  anything. A trailing `# 201` on a `curl -i`/`-si` line is the status it must answer.
- `<!-- example: skip: why -->` on the line before a block keeps it from running; the reason is
  printed. Only what cannot run here is skipped (the test command itself, containers).
"""
import glob
import os
import re
import shutil
import subprocess
import tempfile

import pytest

import herald_process

ROOT = herald_process.ROOT
DOCUMENTS = ["README.md"] + sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))

FENCE = re.compile(r"(?:<!-- example: (?P<directive>[^>]*?) -->\n)?```(?P<lang>sh|bash|shell)\n(?P<body>.*?)```", re.S)
OUTPUT = re.compile(r"^(\{|\[|HTTP/|event:|[A-Z][A-Za-z]*(-[A-Za-z]+)+: |(ETag|Location|Allow|Vary|Connection): |\d{3}( |$))")
STATUS = re.compile(r"curl\b[^#]*\s-[a-zA-Z]*i[a-zA-Z]*\b.*#\s*(\d{3})\b")


def blocks(path):
    text = open(os.path.join(ROOT, path) if not os.path.isabs(path) else path, encoding="utf-8").read()
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start("body")) + 1
        yield line, match.group("directive") or "", match.group("body")


def commands(body):
    """The block's commands (continuation lines joined), each with the output lines shown after it."""
    result = []
    pending = ""
    for raw in body.splitlines():
        line = raw.strip()
        if pending:
            pending += " " + line
            if not line.endswith("\\"):
                result.append([pending.replace("\\ ", " "), []])
                pending = ""
            continue
        if not line:
            continue
        if line.startswith("#"):
            shown = line[1:].strip()
            if result and OUTPUT.match(shown):
                result[-1][1].append(shown)
            continue
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        result.append([line, []])
    return result


def pattern(shown):
    """A shown line as a regular expression: `…` is anything, a run of spaces any space."""
    parts = [re.sub(r"(\\ )+", r"\\s+", re.escape(part)) for part in shown.split("…")]
    return re.compile(".*?".join(parts), re.S)


class Server:
    def __init__(self, directory):
        self.data = tempfile.mkdtemp(prefix="herald-docs-")
        self.directory = directory
        self.process = None
        self.port = None

    def start(self, arguments):
        """(Re)starts Herald with `arguments`, read in the reader's directory (a key file made there)."""
        self.stop()
        arguments = [os.path.join(self.directory, a) if os.path.exists(os.path.join(self.directory, a)) else a for a in arguments]
        self.process, self.port = herald_process.start(["--data-dir", self.data] + arguments, stderr=open(
            os.path.join(self.directory, "herald.log"), "ab"))

    def stop(self):
        if self.process:
            self.process.terminate()
            self.process.wait(timeout=20)
            self.process = None

    def close(self):
        self.stop()
        shutil.rmtree(self.data, ignore_errors=True)


PRELUDE = r"""
set -a
# `herald token` from the sanitized build: its leak check at exit is not what these lines test.
ASAN_OPTIONS=detect_leaks=0
curl() {
  local stream=0 argument
  for argument in "$@"; do case "$argument" in -N|-[a-zA-Z]*N*) stream=1 ;; esac; done
  if [ $stream = 1 ]; then
    command curl --max-time "${STREAM_SECONDS:-3}" "$@"; local code=$?
    [ $code = 28 ] && return 0; return $code
  fi
  command curl --max-time 40 "$@"
}
"""


def localize(command, port, binary):
    command = command.replace("127.0.0.1:8080", f"127.0.0.1:{port}").replace("localhost:8080", f"127.0.0.1:{port}")
    return command.replace(".build/release/herald", binary)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: os.path.relpath(path, ROOT))
def test_every_shell_example_runs_as_written(document, tmp_path):
    found = list(blocks(document))
    if not found:
        pytest.skip("no shell example")
    server = Server(str(tmp_path))
    state = tmp_path / "state.sh"
    state.write_text(PRELUDE)
    failures = []
    try:
        server.start([])
        for line, directive, body in found:
            if directive.startswith("skip"):
                print(f"{document}:{line}: not run ({directive})")
                continue
            for index, (command, shown) in enumerate(commands(body)):
                where = f"{os.path.relpath(document, ROOT) if os.path.isabs(document) else document}:{line}: {command}"
                run = re.match(r"^scripts/run\b(.*)$", command)
                if run:
                    server.start(run.group(1).split())
                    continue
                text = localize(command, server.port, herald_process.binary())
                out = tmp_path / "out"
                script = f"source {state}\ncd {tmp_path}\n{{\n{text}\n}} > {out} 2> {out}.err\ncode=$?\nexport -p > {state}.new\nexit $code\n"
                if text.rstrip().endswith("&"):
                    # A stream left running in the background is read for longer: later lines use it.
                    script = f"source {state}\ncd {tmp_path}\nSTREAM_SECONDS=20 {text}\nexport -p > {state}.new\n"
                # Into files, not pipes: a command left in the background would hold a pipe open.
                with open(tmp_path / "shell.log", "w") as log:
                    result = subprocess.run(["bash", "-c", script], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                            timeout=120, cwd=tmp_path)
                result.stderr = (tmp_path / "shell.log").read_text(errors="replace")
                if os.path.exists(f"{state}.new"):
                    state.write_text(PRELUDE + open(f"{state}.new").read())
                printed = out.read_text(errors="replace") if out.exists() else ""
                if result.returncode != 0:
                    errors = open(f"{out}.err", errors="replace").read() if os.path.exists(f"{out}.err") else ""
                    failures.append(f"{where}\n  exit {result.returncode}: {printed[-500:]}{errors[-300:]}{result.stderr[-300:]}")
                    continue
                status = STATUS.search(command)
                if status and not re.search(rf"^HTTP/\S+ {status.group(1)}\b", printed, re.M):
                    failures.append(f"{where}\n  the document says {status.group(1)}; it answered: {printed[:300]}")
                for expected in shown:
                    if expected[:3].isdigit() and len(expected) > 3:
                        code, expected = expected[:3], expected[4:].strip()
                        if not re.search(rf"^HTTP/\S+ {code}\b", printed, re.M):
                            failures.append(f"{where}\n  the document shows {code}; it answered: {printed[:300]}")
                    if expected and not pattern(expected).search(printed):
                        failures.append(f"{where}\n  the document shows: {expected}\n  it printed: {printed[:600]}")
    finally:
        server.close()
    assert not failures, "\n".join(failures)
