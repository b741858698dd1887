"""Child processes that never outlive the driver.

Every child (sbt, the Play server, ab, PostgreSQL) is started in a session of
its own, so a Ctrl-C typed in the terminal reaches only the driver, and the
driver decides the order in which things stop. Each child's environment
carries PUL_RUN_ID, which lets the tests find anything left behind, and
PUL_DRIVER, the tag of the driver that started it: the watchdog (pul.watchdog)
stops them if the driver dies without doing so, even by SIGKILL, and a later
run cleans up after a driver whose watchdog was killed too.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import signal
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import IO, Iterator, Sequence

from .errors import LabError

RUN_ID_VARIABLE = "PUL_RUN_ID"
# The signals that stop a run: Ctrl-C, `kill`, and SIGHUP (the terminal closed, `vagrant ssh` dropped).
# 128+N is the exit code for each, as a shell reports a command the signal killed.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# "PID:START:UID" of the driver that started a process (START: its start time in clock ticks since
# boot, /proc/PID/stat field 22, which tells the driver from a later process that reuses its PID).
DRIVER_VARIABLE = "PUL_DRIVER"
# The name the driver gave a child ("play server", "postgres"), to say what a clean-up stopped.
NAME_VARIABLE = "PUL_CHILD"


class Interrupted(Exception):
    """Raised in the main thread when the driver gets SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def run_id() -> str:
    """The token every child of this run carries (kept if the caller set one). Also puts this
    driver's tag into the environment every process it starts inherits."""
    existing = os.environ.get(RUN_ID_VARIABLE)
    if not existing:
        existing = uuid.uuid4().hex[:12]
        os.environ[RUN_ID_VARIABLE] = existing
    os.environ[DRIVER_VARIABLE] = driver_tag()
    return existing


def start_time(pid: int) -> str | None:
    """When a process started (clock ticks since boot), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def driver_tag() -> str:
    """This process's tag as a driver: PID:START:UID."""
    return f"{os.getpid()}:{start_time(os.getpid())}:{os.geteuid()}"


def tag_uid(tag: str) -> int | None:
    parts = tag.split(":")
    return int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else None


def driver_alive(tag: str) -> bool:
    """Whether the driver with this tag still runs (the same process, not one that reuses its PID,
    nor a zombie its parent has yet to reap)."""
    parts = tag.split(":")
    if len(parts) != 3 or not parts[0].isdigit():
        return False
    try:
        fields = Path(f"/proc/{parts[0]}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return len(fields) > 19 and fields[0] not in ("Z", "X") and fields[19] == parts[1]


_watchdog: subprocess.Popen | None = None
_watchdog_pipe: int | None = None


def start_watchdog() -> None:
    """Start this driver's watchdog, once (see pul.watchdog): it holds the read end of a pipe whose
    write end only this process holds (not inheritable: no child gets it), and cleans up after
    this driver when the read returns EOF."""
    global _watchdog, _watchdog_pipe
    run_id()
    if _watchdog is not None and _watchdog.args[-1] == driver_tag():
        return
    read_end, write_end = os.pipe()
    env = {k: v for k, v in os.environ.items() if k not in (RUN_ID_VARIABLE, DRIVER_VARIABLE, NAME_VARIABLE)}
    try:
        _watchdog = subprocess.Popen(
            [sys.executable, "-m", "pul.watchdog", driver_tag()], cwd=Path(__file__).resolve().parents[1],
            env=env, stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
    finally:
        os.close(read_end)
    _watchdog_pipe = write_end
    atexit.register(_end_watchdog)


def _end_watchdog(timeout: float = 20) -> None:
    """At a normal exit: close the pipe; the watchdog finds nothing left (or stops it) and exits."""
    global _watchdog, _watchdog_pipe
    if _watchdog_pipe is not None:
        with contextlib.suppress(OSError):
            os.close(_watchdog_pipe)
        _watchdog_pipe = None
    if _watchdog is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _watchdog.wait(timeout)
        _watchdog = None


@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into Interrupted, so `finally` blocks clean up."""

    def handler(signum, _frame):
        # Only the first signal interrupts; later ones (an impatient second Ctrl-C)
        # must not cut the clean-up short and leave a server running.
        for s in STOP_SIGNALS:
            signal.signal(s, lambda *_: None)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextlib.contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM/SIGHUP during a clean-up; re-raise the first one afterwards."""
    received: list[int] = []

    def handler(signum, _frame):
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if received:
        raise Interrupted(received[0])


class Child:
    """A process started in its own session; stop() ends its whole group.

    Its stdin is /dev/null unless `stdin` says otherwise (None: the driver's own, for a command
    the user runs through the driver, like `scripts/with-postgres`'s)."""

    def __init__(self, args: Sequence[str], *, cwd: Path | None = None, env: dict | None = None,
                 stdout: IO | int | None = None, stderr: IO | int | None = subprocess.STDOUT,
                 name: str | None = None, stdin: IO | int | None = subprocess.DEVNULL):
        start_watchdog()
        full_env = dict(os.environ if env is None else env)
        full_env[RUN_ID_VARIABLE] = run_id()
        self.name = name or Path(args[0]).name
        full_env[DRIVER_VARIABLE] = driver_tag()
        full_env[NAME_VARIABLE] = self.name
        self.args = list(args)
        self.popen = subprocess.Popen(
            self.args, cwd=cwd, env=full_env, stdin=stdin,
            stdout=stdout, stderr=stderr, start_new_session=True)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        return self.popen.wait(timeout)

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signum)

    def stop(self, grace: float = 10.0) -> int | None:
        """SIGTERM to the group, then SIGKILL after `grace` seconds."""
        if self.popen.poll() is None:
            self.signal_group(signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self.signal_group(signal.SIGKILL)
                self.popen.wait(5)
        # The leader may be gone while others in its group still run.
        self.signal_group(signal.SIGKILL)
        return self.popen.returncode


class Children:
    """Every child of this run, stopped in reverse order of starting."""

    def __init__(self) -> None:
        self._children: list[Child] = []

    def start(self, args: Sequence[str], **kwargs) -> Child:
        child = Child(args, **kwargs)
        self._children.append(child)
        return child

    def stop(self, child: Child, grace: float = 10.0) -> int | None:
        code = child.stop(grace)
        with contextlib.suppress(ValueError):
            self._children.remove(child)
        return code

    def stop_all(self) -> None:
        with signals_deferred():
            for child in reversed(self._children):
                child.stop(grace=5.0)
            self._children.clear()


def processes_with_run_id(token: str) -> list[int]:
    """PIDs of live processes whose environment carries this run's token."""
    return processes_with_env(RUN_ID_VARIABLE, token)


def processes_with_env(variable: str, value: str) -> list[int]:
    """PIDs of live processes (not zombies) whose environment has VARIABLE=VALUE: everything a
    command started, also in sessions of their own, that did not clear its environment."""
    needle = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if state != "Z" and needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def private_dir() -> Path:
    """This user's own directory for the driver's state (the bench lock): $XDG_RUNTIME_DIR, else
    /run/user/UID (what systemd-logind sets it to, so every session of a user agrees), else
    ~/.cache/play-under-load; never the shared /tmp, where another user could create a file first
    or plant a symbolic link. Created 0700; refused if it is a link, someone else's, or writable
    by others."""
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
    if os.path.isdir(runtime):
        where = Path(runtime) / "play-under-load"
    else:
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        where = Path(os.environ.get("PUL_CACHE_DIR") or Path(cache) / "play-under-load")
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = where.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise LabError(f"{where} must be a directory of your own that nobody else can write to "
                       f"(owner uid {info.st_uid}, mode {stat.filemode(info.st_mode)}); fix or remove it")
    return where


def open_private(path: Path) -> IO:
    """Open (or create, 0600) a regular file of this user's, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as error:
        why = "it is a symbolic link" if error.errno == errno.ELOOP else error.strerror
        raise LabError(f"refusing to open {path}: {why}; remove it") from error
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
        os.close(fd)
        raise LabError(f"refusing to open {path}: not a regular file of your own; remove it")
    return os.fdopen(fd, "r+")


def wait_until(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
