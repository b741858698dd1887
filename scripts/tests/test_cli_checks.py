"""Options the driver refuses before it builds or starts anything: each gives exit 2 and a message
naming the option, within seconds, and no sbt ever starts.

Each command runs with a tripwire: a `java` first on PATH that only records that it was started and
fails. A build (scripts/sbt) or a server start would run it, so it also keeps a regression from
starting a real build on the machine running the tests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from pul import cli, server
from pul.errors import UsageError

REPO = Path(__file__).resolve().parents[2]
LAB = [sys.executable, str(REPO / "scripts" / "lab")]
QUICK = 10.0


@dataclass
class Outcome:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    java_started: bool
    sbt_seen: bool


def _ours(token: str) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes carrying this run's token."""
    found = []
    needle = f"PUL_RUN_ID={token}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append((int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except OSError:
            continue
    return found


def lab_quickly(tmp_path: Path, *args: str) -> Outcome:
    tripwire = tmp_path / "tripwire"
    tripwire.mkdir(exist_ok=True)
    started_marker = tmp_path / "java-started"
    java = tripwire / "java"
    java.write_text(f"#!/bin/sh\necho \"$@\" >> '{started_marker}'\nexit 1\n")
    java.chmod(0o755)
    token = uuid.uuid4().hex[:12]
    env = {**os.environ, "PATH": f"{tripwire}:{os.environ['PATH']}", "PUL_NO_INSTALL": "1",
           "PUL_RUN_ID": token, "PUL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("PUL_BENCH_LOCK_HELD", None)
    began = time.monotonic()
    proc = subprocess.Popen([*LAB, *args], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sbt_seen = False
    try:
        while proc.poll() is None and time.monotonic() - began < QUICK:
            sbt_seen = sbt_seen or any("sbt" in cmd for _, cmd in _ours(token))
            time.sleep(0.05)
    finally:
        seconds = time.monotonic() - began
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # the driver stops what it started
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for pid, _ in _ours(token):  # anything it left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    out, err = proc.communicate()
    return Outcome(proc.returncode if seconds < QUICK else None, out, err, seconds,
                   started_marker.exists(), sbt_seen)


def assert_refused(outcome: Outcome, *words: str) -> None:
    assert not outcome.sbt_seen and not outcome.java_started, f"a build or server started:\n{outcome.stderr}"
    assert outcome.seconds < QUICK, f"still running after {QUICK:.0f} s:\n{outcome.stderr}"
    assert outcome.returncode == 2, outcome.stderr
    for word in words:
        assert word in outcome.stderr, outcome.stderr


# -- item 4: --set cannot override what the driver sets itself --------------------------------

def test_every_property_the_driver_sets_is_reserved():
    from pul import checks

    assert server.WHERE_NOT_WHAT <= set(checks.RESERVED_SETTINGS)


@pytest.mark.parametrize("key, instead", [
    ("http.address", "--listen"), ("play.server.http.address", "--listen"),
    ("http.port", "--port"), ("play.server.http.port", "--port"),
    ("https.port", "plain HTTP"), ("https.address", "plain HTTP"),
    ("play.http.secret.key", "fresh secret"), ("pidfile.path", "pid file"),
    ("user.dir", "start script"), ("play.server.dir", "start script"), ("pul.lab", "lab's name"),
])
def test_reserved_settings_are_refused_with_what_to_use_instead(key, instead):
    with pytest.raises(UsageError, match=f"--set {key}=") as error:
        cli.parse_settings([f"{key}=x"])
    assert instead in str(error.value)
    assert error.value.exit_code == 2


def test_other_settings_still_pass():
    assert cli.parse_settings(["akka.actor.default-dispatcher.fork-join-executor.parallelism-max=64",
                               "play.server.http.idleTimeout=75s", "x=a=b"]) == {
        "akka.actor.default-dispatcher.fork-join-executor.parallelism-max": "64",
        "play.server.http.idleTimeout": "75s", "x": "a=b"}


def test_serve_refuses_set_http_address_round_the_listen_guard(tmp_path):
    assert_refused(lab_quickly(tmp_path, "serve", "01", "--set", "http.address=0.0.0.0"),
                   "http.address", "--listen")


def test_run_refuses_set_http_port(tmp_path):
    assert_refused(lab_quickly(tmp_path, "run", "01", "--no-report", "--results-dir", str(tmp_path / "r"),
                               "--set", "http.port=80"), "http.port", "--port")
