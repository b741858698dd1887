"""Options the driver refuses before it builds or starts anything: each gives exit 2 and a message
naming the option, within seconds, and no sbt ever starts.

Each command runs with a tripwire: a `java` first on PATH that only records that it was started and
fails. A build (scripts/sbt) or a server start would run it, so it also keeps a regression from
starting a real build on the machine running the tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import tempfile
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


# -- item 5: options checked before any build -------------------------------------------------

def _run_01(tmp_path: Path, *args: str) -> Outcome:
    return lab_quickly(tmp_path, "run", "01", "--no-report", *args)


def test_results_dir_under_a_file_is_refused(tmp_path):
    (tmp_path / "a-file").write_text("")
    assert_refused(_run_01(tmp_path, "--results-dir", str(tmp_path / "a-file" / "results")),
                   "--results-dir", "a-file", "is a file, not a folder")


def test_results_dir_that_cannot_be_written_is_refused(tmp_path):
    # /sys refuses new files even to root (EACCES, or EROFS where it is mounted read-only).
    assert_refused(_run_01(tmp_path, "--results-dir", "/sys/pul-results"),
                   "--results-dir /sys/pul-results", "not writable", "/sys")


def test_a_results_dir_that_can_be_created_is_not_created_by_the_check(tmp_path):
    from pul import checks

    wanted = tmp_path / "new" / "deeper"
    checks.check_writable_folder(wanted, "--results-dir")
    assert not (tmp_path / "new").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--server-cpus", "--load-cpus"])
def test_cpus_this_process_cannot_use_are_refused_with_the_ones_it_can(tmp_path, option):
    available = os.sched_getaffinity(0)
    missing = max(available) + 1
    outcome = _run_01(tmp_path, "--results-dir", str(tmp_path / "r"), option, f"0,{missing}")
    assert_refused(outcome, option, f"CPU {missing} is not available")
    from pul import checks

    assert f"may use: {checks.describe_cpus(available)}" in outcome.stderr


@pytest.mark.parametrize("text", ["zero", "1:2", "3-1", "0-3:2", "", "1,,2"])
def test_cpu_lists_that_are_not_lists_are_refused(tmp_path, text):
    assert_refused(_run_01(tmp_path, "--results-dir", str(tmp_path / "r"), "--server-cpus", text),
                   "--server-cpus takes a list of CPU numbers")


def test_serve_checks_its_server_cpus_too(tmp_path):
    missing = max(os.sched_getaffinity(0)) + 1
    assert_refused(lab_quickly(tmp_path, "serve", "01", "--server-cpus", str(missing)), "--server-cpus")


def test_cpu_lists_parse_like_taskset():
    from pul import checks

    assert checks.parse_cpu_list("0", "--x") == {0}
    assert checks.parse_cpu_list("0,2-4", "--x") == {0, 2, 3, 4}
    assert checks.describe_cpus({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def test_a_concurrency_ab_refuses_is_refused(tmp_path):
    from pul import checks

    limit = checks.ab_max_concurrency()
    outcome = _run_01(tmp_path, "--results-dir", str(tmp_path / "r"), "--concurrency", str(limit + 1),
                      "--requests", str(limit + 1))
    assert_refused(outcome, f"--concurrency {limit + 1}", f"({limit}, its MAX_CONCURRENCY)")


def test_the_installed_abs_limit_is_the_one_it_reports(tmp_path):
    """ab 2.3 from httpd 2.4 (Debian 12) accepts 200000; older ones 20000: ask, do not assume."""
    from pul import ab, checks

    fake = tmp_path / "ab"
    fake.write_text("#!/bin/sh\necho 'ab: Invalid Concurrency [Range 0..20000]' >&2\nexit 22\n")
    fake.chmod(0o755)
    assert checks.ab_max_concurrency(str(fake)) == 20000
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert checks.ab_max_concurrency(str(fake)) == ab.MAX_CONCURRENCY
    if shutil.which("ab"):
        done = subprocess.run(["ab", "-c", str(checks.ab_max_concurrency() + 1), "-n", "1", "http://127.0.0.1:1/"],
                              capture_output=True, text=True, timeout=10)
        assert f"Invalid Concurrency [Range 0..{checks.ab_max_concurrency()}]" in done.stderr


# -- item 5: a port that cannot be listened on is not "in use" ---------------------------------

def test_a_privileged_port_as_a_user_is_permission_denied_not_in_use(tmp_path):
    sysctl = Path("/proc/sys/net/ipv4/ip_unprivileged_port_start")
    if not sysctl.exists() or int(sysctl.read_text()) <= 80:
        pytest.skip("any user may listen on port 80 here")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from pul import server, errors\n"
            "try:\n    server.check_port(80)\n"
            "except errors.LabError as e:\n    print(type(e).__name__, e.exit_code, e)\n")
    user, python, scripts = {}, sys.executable, REPO / "scripts"
    if os.geteuid() == 0:
        # As root, bind() may use any port: ask as nobody, with a Python nobody may run, and a copy
        # of the driver nobody may read (a clone in root's home, mode 700, is closed to nobody).
        user, python = {"user": "nobody"}, "/usr/bin/python3"
        if not os.access(python, os.X_OK):
            pytest.skip("no system Python to run as nobody")
        scripts = Path(tempfile.mkdtemp(prefix="pul-as-nobody-"))
        shutil.copytree(REPO / "scripts", scripts, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        for folder in (scripts, *(p for p in scripts.rglob("*") if p.is_dir())):
            folder.chmod(0o755)
        for file in (p for p in scripts.rglob("*") if p.is_file()):
            file.chmod(0o644)
    try:
        done = subprocess.run([python, "-c", code, str(scripts)], capture_output=True, text=True,
                              timeout=30, cwd="/", **user)
    finally:
        if scripts != REPO / "scripts":
            shutil.rmtree(scripts)
    assert done.stdout.startswith("UsageError 2 "), done.stdout + done.stderr
    assert "permission denied" in done.stdout and "privileged" in done.stdout and "already in use" not in done.stdout


def test_an_address_not_on_this_machine_is_said_so():
    with pytest.raises(UsageError, match="not an address of this machine"):
        server.check_port(0, "192.0.2.1")  # TEST-NET-1 (RFC 5737): on no machine


def test_a_port_in_use_is_still_in_use():
    import socket

    from pul.errors import PortBusy

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        with pytest.raises(PortBusy, match="already in use"):
            server.check_port(holder.getsockname()[1])


def test_build_refuses_an_unknown_lab_before_building_any(tmp_path):
    # 01 is fine, 99 is not: nothing is built, not even 01.
    assert_refused(lab_quickly(tmp_path, "build", "01", "99"), "unknown lab '99'")


def test_build_refuses_an_unknown_option(tmp_path):
    assert_refused(lab_quickly(tmp_path, "build", "--fast"), "unrecognized arguments: --fast")


@pytest.mark.parametrize("period", ["0", "1001"])
def test_a_profile_period_the_server_would_refuse_is_refused_first(tmp_path, period):
    assert_refused(_run_01(tmp_path, "--results-dir", str(tmp_path / "r"), "--profile", period),
                   "--profile takes a period of 1 to 1000 ms")
