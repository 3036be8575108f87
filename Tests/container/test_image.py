"""The image docs/deployment.md's podman command builds: it keeps its HEALTHCHECK (the OCI format, podman's
default, drops it), and a container of it reports healthy once Herald is ready, and unhealthy while
it drains.

Runs where podman and the two base images (debian:bookworm-slim, swift:6.3-bookworm) are present;
skipped, saying so, elsewhere. A machine whose podman needs more options (another runtime, host
networking, a toolchain mounted into the build) gives them in HERALD_PODMAN (global options),
HERALD_PODMAN_BUILD and HERALD_PODMAN_RUN, split like a shell's words.
"""
import json
import os
import shlex
import shutil
import subprocess
import time
import urllib.request

import pytest

import herald_process

PODMAN = shutil.which("podman")
IMAGE = "localhost/herald-test:latest"


def podman(*arguments, check=True, timeout=1800):
    command = [PODMAN] + shlex.split(os.environ.get("HERALD_PODMAN", "")) + list(arguments)
    return subprocess.run(command, capture_output=True, text=True, check=check, timeout=timeout)


def bases_present():
    return all(podman("image", "exists", name, check=False).returncode == 0
               for name in ("docker.io/library/debian:bookworm-slim", "docker.io/library/swift:6.3-bookworm"))


def why_not():
    """Why the image cannot be built and run here, or None when it can."""
    if not PODMAN:
        return "no podman on this machine"
    if not bases_present():
        return "podman has not the base images (debian:bookworm-slim, swift:6.3-bookworm)"
    probe = podman("run", "--rm", *shlex.split(os.environ.get("HERALD_PODMAN_RUN", "")), "docker.io/library/debian:bookworm-slim",
                   "true", check=False, timeout=120)
    if probe.returncode != 0:
        return "podman cannot run a container here (set HERALD_PODMAN, HERALD_PODMAN_RUN): " + (probe.stderr.strip().splitlines() or ["?"])[-1]
    return None


REASON = why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def image():
    # docs/deployment.md's command: `podman build --format docker -t herald .`
    build = podman("build", "--format", "docker", *shlex.split(os.environ.get("HERALD_PODMAN_BUILD", "")), "-t", IMAGE,
                   herald_process.ROOT, check=False)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "HEALTHCHECK is not supported" not in build.stderr, "the docker format keeps the health check"
    yield IMAGE
    podman("rmi", "-f", IMAGE, check=False)


def test_the_image_keeps_its_health_check(image):
    config = json.loads(podman("image", "inspect", image).stdout)[0]
    # podman says `Healthcheck` at the top; docker says it inside `Config`.
    check = next((value for source in (config, config.get("Config") or {}) for key, value in source.items()
                  if key.lower() == "healthcheck" and value), {})
    assert "/health/ready" in " ".join(check.get("Test", [])), f"no health check in the image: {json.dumps(config)[:2000]}"


def test_a_container_is_healthy_once_ready(image):
    port = herald_process.free_port()
    run = podman("run", "-d", *shlex.split(os.environ.get("HERALD_PODMAN_RUN", "")), "-e", f"HERALD_PORT={port}",
                 "-p", f"127.0.0.1:{port}:{port}", image, "--in-memory")
    container = run.stdout.strip()
    try:
        deadline = time.time() + 60
        healthy = None
        while time.time() < deadline:
            healthy = podman("healthcheck", "run", container, check=False)
            if healthy.returncode == 0:
                break
            time.sleep(0.5)
        assert healthy is not None and healthy.returncode == 0, f"never healthy: {healthy.stdout}{healthy.stderr}"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=5) as response:
            assert response.status == 200
        status = json.loads(podman("inspect", container).stdout)[0]["State"].get("Health", {}).get("Status")
        assert status == "healthy", status
    finally:
        podman("rm", "-f", container, check=False)
