"""A driver killed with SIGKILL mid-measurement leaves nothing behind: its watchdog stops the server and
ab, and if the watchdog was killed too, the next start cleans up and says so. (SIGINT, SIGTERM and
SIGHUP: test_lab01.py's interrupt test.)"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess

import pytest

from pul.procs import processes_with_run_id, wait_until
from pul.testing import LAB, REPO, Driver

# Real runs of the lab, no number asserted: scripts/test's lifecycle part runs them.
pytestmark = [pytest.mark.slow, pytest.mark.lifecycle]


def _command(pid: int) -> bytes:
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""


def _watchdogs(driver: Driver) -> list[int]:
    """The driver's watchdog: `python3 -m pul.watchdog PID:START:UID`."""
    needle = b"pul.watchdog\0" + f"{driver.popen.pid}:".encode()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and needle in _command(int(p))]


def _port(driver: Driver) -> int:
    return int(re.search(r"starting the server on http://127\.0\.0\.1:(\d+)", driver.output()).group(1))


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


def _mid_measurement(tmp_path) -> Driver:
    # No warm-up: the measured run starts right after the server (what is killed is the same).
    driver = Driver("01", "--warmup", "0", "--variant", "java-blocking", "--results-dir", str(tmp_path),
                    "--no-report", log=tmp_path / "driver.log")
    driver.wait_for("measuring", timeout=240)
    servers = [pid for pid in driver.children() if b"ProdServerStart" in _command(pid)]
    assert servers, "no server JVM mid-measurement?"
    assert not _port_is_free(_port(driver))
    return driver


def test_sigkill_of_the_driver_leaves_no_process_behind_and_frees_the_port(tmp_path):
    driver = _mid_measurement(tmp_path)
    try:
        watchdogs = _watchdogs(driver)
        os.kill(driver.popen.pid, signal.SIGKILL)
        assert driver.wait(10) == -signal.SIGKILL
        assert wait_until(lambda: not processes_with_run_id(driver.token), 30), driver.leftovers(0)
        assert _port_is_free(_port(driver))
        assert len(watchdogs) == 1 and wait_until(lambda: not _watchdogs(driver), 10), \
            f"the watchdog ({watchdogs}) outlived its clean-up"
        assert not (tmp_path / "latest.json").exists()
    finally:
        driver.kill_everything()


def test_the_next_start_cleans_up_after_a_driver_killed_with_its_watchdog(tmp_path):
    driver = _mid_measurement(tmp_path)
    try:
        server = next(pid for pid in driver.children() if b"ProdServerStart" in _command(pid))
        server_group = os.getpgid(server)
        # The watchdog first, so that it cannot clean up after the driver.
        for pid in _watchdogs(driver) + [driver.popen.pid]:
            os.kill(pid, signal.SIGKILL)
        driver.wait(10)
        assert driver.children(), "nothing left to clean up: the watchdog was not killed in time?"
        # The cheapest start that cleans up: listing the lab's exercises.
        later = subprocess.run([*LAB, "check", "01", "--list"], cwd=REPO, capture_output=True, text=True,
                               timeout=60)
        assert later.returncode == 0, later.stderr
        assert (f"cleaned up after an earlier run that was killed: play server (PID {server_group})"
                in later.stderr.splitlines()), later.stderr
        assert wait_until(lambda: not processes_with_run_id(driver.token), 5), driver.leftovers(0)
        assert _port_is_free(_port(driver))
    finally:
        driver.kill_everything()
