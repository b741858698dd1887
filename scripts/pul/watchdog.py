"""Nothing a driver started outlives it, not even when the driver is SIGKILLed.

Two parts, both finding a run's processes by the tag every child carries in its
environment (procs.DRIVER_VARIABLE: the driver's PID, its start time and its
user; the start time tells a dead driver's PID from a new process that got it):

- The watchdog: one small process per driver (`python3 -m pul.watchdog TAG`,
  started by procs.start_watchdog in a session of its own, so a hang-up does
  not reach it). Its stdin is the read end of a pipe whose write end only the
  driver holds, so the read returns EOF when the driver ends, however it ends:
  the kernel closes the pipe even after a SIGKILL. The watchdog then stops
  every process with its driver's tag (SIGTERM to each process group, SIGKILL
  after a grace period) and removes the driver's throwaway PostgreSQL
  directories and its CPU limit's group (pul.cpulimit). After a normal end
  nothing is left to stop, and it just exits.
- clean_leftovers(): what `scripts/lab run`, `serve`, `check` and
  `scripts/with-postgres` do first. It stops the processes and removes the
  directories of this user's drivers that no longer run (a killed driver whose
  watchdog was killed too), and prints one line for each.

Neither touches a process whose driver still runs, or another user's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import cpulimit
from .procs import (DRIVER_VARIABLE, NAME_VARIABLE, RUN_ID_VARIABLE, driver_alive, driver_tag, run_id,
                    tag_uid)

# The file in a throwaway PostgreSQL directory that names the driver owning it.
OWNER_FILE = "pul-driver"
POSTGRES_PREFIX = "pul-postgres-"
GRACE = 5.0


@dataclass(frozen=True)
class Tagged:
    """A live process that carries a driver's tag."""

    pid: int
    pgid: int
    start: str
    driver: str
    run_id: str
    name: str


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def tagged_processes() -> list[Tagged]:
    """Every live process whose environment carries a driver's tag (and that this user may read)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if DRIVER_VARIABLE.encode() + b"=" not in environ:
            continue
        env = dict(item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item)
        fields = _stat_fields(int(entry.name))
        if not fields or fields[0] in ("Z", "X"):
            continue
        name = env.get(NAME_VARIABLE.encode(), b"").decode(errors="replace")
        if not name:
            with contextlib.suppress(OSError):
                name = (entry / "comm").read_text().strip()
        found.append(Tagged(int(entry.name), int(fields[2]), fields[19],
                            env[DRIVER_VARIABLE.encode()].decode(errors="replace"),
                            env.get(RUN_ID_VARIABLE.encode(), b"").decode(errors="replace"), name))
    return found


def _alive(process: Tagged) -> bool:
    fields = _stat_fields(process.pid)
    return bool(fields) and fields[0] not in ("Z", "X") and fields[19] == process.start


def stop(processes: list[Tagged], grace: float = GRACE) -> list[Tagged]:
    """SIGTERM, then SIGKILL after `grace` seconds. A process group is signalled as a whole when
    its leader is one of `processes` (a child the driver started in a session of its own: it takes
    along members whose environment cannot be read, like PostgreSQL's backends, which overwrite
    theirs with their process titles); any other process alone. Returns the group leaders and the
    lone processes, one for each thing stopped."""
    pids = {p.pid for p in processes}
    leaders = [p for p in processes if p.pid == p.pgid]
    alone = [p for p in processes if p.pgid not in pids]

    def send(signum: int) -> None:
        for p in leaders:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pgid, signum)
        for p in alone:
            if _alive(p):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p.pid, signum)

    def all_gone() -> bool:
        return not any(_alive(p) for p in processes)

    send(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not all_gone() and time.monotonic() < deadline:
        time.sleep(0.1)
    if not all_gone():
        send(signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not all_gone() and time.monotonic() < deadline:
            time.sleep(0.1)
    # A group whose leader is gone may still have members nobody could see.
    for p in leaders:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pgid, signal.SIGKILL)
    return leaders + alone


def claim(directory: Path) -> None:
    """Mark a throwaway directory as this driver's (written by this user: another one could not
    forge it), so that the watchdog or a later run removes it if the driver is killed."""
    run_id()
    (directory / OWNER_FILE).write_text(f"{DRIVER_VARIABLE}={driver_tag()}\n")


def claimed_directories(temp_dir: Path | None = None) -> list[tuple[Path, str]]:
    """This user's throwaway PostgreSQL directories, each with its driver's tag."""
    found = []
    for path in sorted(Path(temp_dir or tempfile.gettempdir()).glob(POSTGRES_PREFIX + "*")):
        owner = path / OWNER_FILE
        try:
            if not path.is_dir() or path.is_symlink():
                continue
            info = owner.lstat()
            if not owner.is_file() or owner.is_symlink() or info.st_uid != os.geteuid():
                continue
            text = owner.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key == DRIVER_VARIABLE and value:
                found.append((path, value))
    return found


def remove(directory: Path) -> bool:
    shutil.rmtree(directory, ignore_errors=True)
    return not directory.exists()


def clean_up_after(is_target, temp_dir: Path | None = None, grace: float = GRACE) -> list[str]:
    """Stop the tagged processes and remove the claimed directories whose driver's tag
    `is_target` accepts; one description for each."""
    victims = [p for p in tagged_processes() if is_target(p.driver)]
    done = [f"{p.name or 'process'} (PID {p.pid})" for p in stop(victims, grace)] if victims else []
    for directory, tag in claimed_directories(temp_dir):
        if is_target(tag) and remove(directory):
            done.append(str(directory))
    # A CPU limit's group, once the processes in it are stopped.
    done += cpulimit.remove_leftovers(is_target)
    return done


def dead_run_of_this_user(tag: str) -> bool:
    return tag_uid(tag) == os.geteuid() and not driver_alive(tag)


def clean_leftovers(temp_dir: Path | None = None, stream=None) -> list[str]:
    """What earlier runs of this user left behind when they were killed: stopped, removed and said."""
    done = clean_up_after(dead_run_of_this_user, temp_dir)
    for thing in done:
        print(f"cleaned up after an earlier run that was killed: {thing}", file=stream or sys.stderr, flush=True)
    return done


def main(argv: list[str]) -> int:
    """The watchdog: wait for EOF on stdin (the driver ended), then clean up after it."""
    if len(argv) != 1:
        print("usage: python3 -m pul.watchdog DRIVER_TAG  (stdin: a pipe only the driver writes to)",
              file=sys.stderr)
        return 2
    tag = argv[0]
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(signum, signal.SIG_IGN)
    while True:
        try:
            if not os.read(0, 4096):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    clean_up_after(lambda driver: driver == tag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
