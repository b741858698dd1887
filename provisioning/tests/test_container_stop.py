"""The container test leaves nothing running however it ends: SIGTERM (the test runner's, or the
census's, stopping a part) or SIGKILL right after (a runner's grace run out). Its container's
systemd once outlived a SIGKILLed systemd-nspawn, reparented to PID 1 with journald, logind and
PostgreSQL. Run by `scripts/test provisioning` after container-test (which caches the root
filesystem this boots from: about 10 s then)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CONTAINER_TEST = REPO / "provisioning" / "tests" / "container-test"
BOOTED = re.compile(r"container booted \(init PID (\d+)")
WORK = re.compile(r"unpacking the root filesystem into (\S+)")


def rootfs_cached() -> bool:
    cache = Path(os.environ.get("PUL_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                 / "play-under-load") / "provisioning"
    return any(cache.glob("rootfs-bookworm-*.tar"))


def in_namespace(pid_namespace: str) -> list[int]:
    """PIDs in a PID namespace ('pid:[4026532178]': the container's systemd and its services;
    their root directory says nothing from here, nspawn having pivoted into the container's)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if os.readlink(proc / "ns" / "pid") == pid_namespace:
                    found.append(int(proc.name))
            except OSError:
                pass
    return found


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie (this machine's PID 1 may not reap what it inherits)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"), reason="needs root and systemd-nspawn")
@pytest.mark.parametrize("stop", ["SIGTERM", "SIGKILL"])
def test_a_stopped_container_test_leaves_no_container(stop, tmp_path):
    if not rootfs_cached():
        pytest.skip("no cached root filesystem (provisioning/tests/container-test builds it)")
    log = tmp_path / "container-test.log"
    env = {**os.environ, "PUL_CONTAINER": "nspawn", "PUL_CONTAINER_HOLD_AFTER_BOOT": "1",
           "PUL_BENCH_LOCK_HELD": "1"}
    with log.open("w") as out:
        test = subprocess.Popen([str(CONTAINER_TEST)], stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    work = init = namespace = None
    cleaned_up = False  # whether the script ended by itself, its clean-up done
    try:
        deadline = time.monotonic() + 180
        while init is None and test.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            text = log.read_text()
            if work is None and (unpacked := WORK.search(text)):
                work = unpacked.group(1)
            if booted := BOOTED.search(text):
                init = int(booted.group(1))
        assert init, log.read_text()[-2000:]
        namespace = os.readlink(f"/proc/{init}/ns/pid")
        assert namespace != os.readlink("/proc/self/ns/pid"), "the container's init shares this PID namespace"
        if stop == "SIGTERM":
            # The runner's way: SIGTERM to the group, SIGKILL after a grace of 10 s.
            os.killpg(test.pid, signal.SIGTERM)
            try:
                test.wait(10)
                cleaned_up = True
            except subprocess.TimeoutExpired:
                os.killpg(test.pid, signal.SIGKILL)
        else:
            os.killpg(test.pid, signal.SIGKILL)
        test.wait(30)
        deadline = time.monotonic() + 15
        while (not gone(init) or in_namespace(namespace)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert gone(init), f"the container's init (PID {init}) outlived container-test ({stop})"
        assert not in_namespace(namespace), f"still running in the container after {stop}: {in_namespace(namespace)}"
    finally:
        if test.poll() is None:
            os.killpg(test.pid, signal.SIGKILL)
            test.wait()
        if namespace and init and not gone(init):
            os.kill(init, signal.SIGKILL)  # this test's own container's init: its namespace goes with it
        left = work and Path(work).is_dir()
        if left and not cleaned_up:
            # SIGKILL gave the script no clean-up; its own directory is this test's to remove.
            subprocess.run(["rm", "-rf", "--one-file-system", work], check=False)
    if cleaned_up:
        assert not left, f"container-test's clean-up left {work}"
