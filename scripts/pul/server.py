"""Building a lab with sbt and running its production server."""

from __future__ import annotations

import contextlib
import errno
import html
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from . import cpulimit, playline
from .errors import BuildFailed, PortBusy, ServerFailed, UsageError
from .checks import describe_cpus, parse_cpu_list
from .probe import CLOCK_TICKS, cpu_ticks, group_cpu_seconds, group_pids, stat_fields
from .procs import Child, Children
from .progress import Progress

REPO = Path(__file__).resolve().parents[2]
SBT = REPO / "scripts" / "sbt"
# What a lab's build reads, relative to the lab: its own files, and the instruments module and the
# build code every lab shares beside it (labs/instruments, labs/sbt).
BUILD_INPUTS = ("app", "conf", "public", "build.sbt", "project/build.properties",
                "../instruments/app", "../instruments/conf", "../sbt")
# The build definition's own files (not its target/ below): whatever a lab adds there counts too.
BUILD_FILES = ("project/*.sbt", "project/*.scala", "project/project/*.sbt", "project/project/*.scala")


def _newest_input(lab_dir: Path) -> float:
    newest = max((path.stat().st_mtime for pattern in BUILD_FILES for path in lab_dir.glob(pattern)), default=0.0)
    for name in BUILD_INPUTS:
        path = lab_dir / name
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
        elif path.is_dir():
            for f in path.rglob("*"):
                if f.is_file():
                    newest = max(newest, f.stat().st_mtime)
    return newest


def staged_script(lab_dir: Path) -> Path | None:
    """The start script `sbt stage` wrote for the Play line the labs build on now (pul.playline)."""
    bin_dir = playline.target_dir(lab_dir) / "universal" / "stage" / "bin"
    scripts = [p for p in bin_dir.glob("*") if p.is_file() and p.suffix != ".bat"] if bin_dir.is_dir() else []
    return scripts[0] if len(scripts) == 1 else None


def build(lab_dir: Path, children: Children, progress: Progress, force: bool = False, test: bool = False,
          test_instruments: bool = True) -> Path:
    """`sbt stage` on the current Play line, skipped when nothing changed since its last successful build.
    With `test`, `sbt test stage` (in the lab's test-env, if it has one: a database), always,
    and the instruments module's own tests first unless `test_instruments` is false."""
    if not force and not test and up_to_date(lab_dir):
        progress.step(f"build: {lab_dir.name} is up to date (use --rebuild to force)")
        return staged_script(lab_dir)
    log_path = playline.target_dir(lab_dir) / "pul-build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    line = playline.current()
    # The module's tests need only the module: the same sources on the same line pass or fail alike
    # in every lab, so a build of several labs runs them once (build_together).
    tasks = _tasks(test, test_instruments)
    progress.step(f"building {lab_dir.name} on {playline.LINES[line]} (sbt {' '.join(tasks)}; a line's first "
                  "build downloads ~270 MB, about a minute)")
    started_at = time.time()
    returncode = _run_sbt([*_test_env([lab_dir], test), str(SBT), *tasks], lab_dir, log_path, children, progress)
    script = staged_script(lab_dir)
    if returncode != 0 or script is None:
        raise BuildFailed(f"`sbt {' '.join(tasks)}` failed in {lab_dir} on {playline.LINES[line]} "
                          f"(log: {log_path}):\n{_tail(log_path, 80 if test else 25)}")
    _stamp(lab_dir, started_at)
    return script


def _tasks(test: bool, test_instruments: bool) -> list[str]:
    """A lab's sbt tasks: `stage`, after its Play tests (and the instruments module's) with `test`."""
    return [*(["instruments/test"] if test and test_instruments else []), *(["test"] if test else []), "stage"]


def _test_env(lab_dirs: list[Path], test: bool) -> list[str]:
    """The labs' test-env wrappers (a database for their Play tests), for a build that tests."""
    return [str(d / "test-env") for d in lab_dirs if test and os.access(d / "test-env", os.X_OK)]


def _run_sbt(command: list[str], cwd: Path, log_path: Path, children: Children, progress: Progress) -> int:
    """sbt's command run to its end, its output in `log_path`, its last line as progress; its exit code."""
    with log_path.open("w") as log:
        child = children.start(command, cwd=cwd, stdout=log, name="sbt")
        while child.poll() is None:
            progress.update(_last_line(log_path) or "starting sbt")
            time.sleep(0.5)
        children.stop(child)
    progress.clear()
    return child.popen.returncode


def _stamp_file(lab_dir: Path) -> Path:
    return playline.target_dir(lab_dir) / "pul-staged.stamp"


def _stamp(lab_dir: Path, started_at: float) -> None:
    """The lab staged on the current line as of `started_at`: what up_to_date compares its inputs with."""
    stamp = _stamp_file(lab_dir)
    stamp.write_text(f"{started_at}\n")
    os.utime(stamp, (started_at, started_at))


def up_to_date(lab_dir: Path) -> bool:
    """Staged on the current Play line since its inputs last changed."""
    stamp = _stamp_file(lab_dir)
    return (staged_script(lab_dir) is not None and stamp.exists()
            and stamp.stat().st_mtime >= _newest_input(lab_dir))


# The line sbt prints after each command that succeeded (plain output: -Dsbt.log.noformat).
_SUCCESS = re.compile(r"^\[success\] Total time")


def split_by_command(output: str, owners: list) -> tuple[dict, int]:
    """sbt's output of several commands, each cut after its [success] line and given to its owner
    (owners[i] ran command i), and how many commands succeeded. The first command's part holds
    sbt's loading too; the command that did not succeed gets everything after the last success."""
    lines: dict = {}
    done = 0
    for text in output.splitlines(keepends=True):
        lines.setdefault(owners[min(done, len(owners) - 1)], []).append(text)
        if _SUCCESS.match(text):
            done += 1
    return {owner: "".join(texts) for owner, texts in lines.items()}, min(done, len(owners))


def aggregate_build(lab_dirs: list[Path]) -> str:
    """The build.sbt of a scratch build that aggregates these labs' own builds. It has no sources of
    its own; build_together's commands name each lab's projects, one lab at a time, so two labs'
    Play tests (and their databases) never run at once."""
    # json.dumps: a Scala string literal, whatever the path holds (a quote, a backslash).
    refs = ",\n".join(f"    RootProject(file({json.dumps(str(d.resolve()))}))" for d in lab_dirs)
    return ("lazy val together = (project in file(\".\"))\n"
            "  .settings(autoScalaLibrary := false, managedScalaInstance := false)\n"
            f"  .aggregate(\n{refs}\n  )\n")


def own_bases(lab_dirs: list[Path]) -> str:
    """An sbt `set` command that gives each lab's build its own directory as zinc's ${BASE}.

    Zinc records a source by its path relative to ${BASE}, and a path outside every root as it is.
    sbt makes BASE the directory it started in (rootPaths, one per build, in sbt's
    Defaults.buildLevelJvmSettings; the file converter is made from it), here the scratch build's:
    each lab's records would name its sources by absolute path, and the lab's own sbt (a later `sbt
    run`, or a copy of the lab for an exercise) would compile all of it again. A .sbt file's settings
    stay in its own build; `set` reaches the others. (Each lab's build definition, project/, is
    compiled while sbt loads, before any command: the lab's own sbt compiles that again, seconds.)"""
    settings = ", ".join(
        f"BuildRef(file({path}).toPath.toUri) / rootPaths ~= (_ + (\"BASE\" -> file({path}).toPath))"
        for path in (json.dumps(str(d.resolve())) for d in lab_dirs))
    return f"set Seq({settings})"


def build_together(lab_dirs: list[Path], children: Children, progress: Progress, force: bool = False,
                   test: bool = False) -> list[Path]:
    """What build() does for each lab, in one sbt for them all: a scratch build that aggregates the
    labs' own builds (RootProject, each with its project/ and target/), runs each lab's tasks in
    turn (with `test`, the instruments module's tests once, first) and splits sbt's output into each
    lab's pul-build.log. One JVM loads sbt and warms its compilers once instead of once a lab: the
    labs part of the suite spends most of its CPU there. Labs with a test-env (a PostgreSQL) run
    inside each one. A lab that is up to date is skipped, as build() skips it."""
    todo = [d for d in lab_dirs if force or test or not up_to_date(d)]
    if len(todo) < 2:
        return [build(d, children, progress, force=force, test=test, test_instruments=i == 0)
                for i, d in enumerate(lab_dirs)]
    line = playline.current()
    plan = [(lab_dir, task) for number, lab_dir in enumerate(todo) for task in _tasks(test, number == 0)]
    # A build's projects are named with its URI: {file:/…/labs/NN-name/}root/test.
    commands = [own_bases(todo),
                *(f"{{{d.resolve().as_uri()}/}}{task if '/' in task else 'root/' + task}" for d, task in plan)]
    names = " ".join(d.name[:2] for d in todo)
    progress.step(f"building labs {names} on {playline.LINES[line]} in one sbt (a line's first build downloads "
                  "~270 MB, about a minute)")
    scratch = Path(tempfile.mkdtemp(prefix="pul-build-together-"))
    try:
        (scratch / "project").mkdir()
        shutil.copy(todo[0] / "project" / "build.properties", scratch / "project" / "build.properties")
        (scratch / "build.sbt").write_text(aggregate_build(todo))
        log_path = scratch / "sbt.log"
        started_at = time.time()
        returncode = _run_sbt([*_test_env(todo, test), str(SBT), *commands], scratch, log_path, children, progress)
        logs, failed_at = split_by_command(log_path.read_text(errors="replace"), [d for d, _ in plan])
        for lab_dir, text in logs.items():
            target = playline.target_dir(lab_dir)
            target.mkdir(parents=True, exist_ok=True)
            (target / "pul-build.log").write_text(text)
        if returncode != 0 or failed_at < len(plan):
            lab_dir, task = plan[min(failed_at, len(plan) - 1)]
            own = playline.target_dir(lab_dir) / "pul-build.log"
            raise BuildFailed(f"`sbt {task}` failed in {lab_dir} on {playline.LINES[line]}, built in one sbt with "
                              f"labs {names} (log: {own}):\n{_tail(own, 80 if test else 25)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    scripts = []
    for lab_dir in lab_dirs:
        script = staged_script(lab_dir)
        if script is None:
            raise BuildFailed(f"sbt left no start script in {lab_dir} on {playline.LINES[line]}")
        if lab_dir in todo:
            _stamp(lab_dir, started_at)
        scripts.append(script)
    return scripts


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:100] if lines else ""


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").rstrip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def who_listens(port: int) -> str:
    """A human description of what holds a TCP port, as far as `ss` can tell."""
    try:
        out = subprocess.run(["ss", "-Htlnp", f"sport = :{port}"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown (ss is not available)"
    holders = sorted(set(re.findall(r'"([^"]+)",pid=(\d+)', out)))
    if holders:
        return ", ".join(f"{name} (PID {pid})" for name, pid in holders)
    return "a process this user cannot see (try: sudo ss -tlnp)" if out else "unknown"


def check_port(port: int, host: str = "127.0.0.1") -> None:
    """PortBusy if something listens there; UsageError if this user or machine cannot listen there."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise PortBusy(f"port {port} on {host} is already in use (held by: {who_listens(port)}). "
                               "Pick another with --port, or leave --port out to let the driver choose a free one.")
            if error.errno == errno.EACCES:
                start = _unprivileged_port_start()
                why = (f"ports below {start} are privileged: only root (or a program with CAP_NET_BIND_SERVICE) "
                       f"may listen there. Pick one from {start} up with --port"
                       if port < start else "pick another with --port")
                raise UsageError(f"port {port} on {host}: permission denied; {why}.")
            if error.errno == errno.EADDRNOTAVAIL:
                raise UsageError(f"{host} is not an address of this machine, so no server can listen on it "
                                 "(`ip -brief address` lists this machine's addresses).")
            raise UsageError(f"cannot listen on port {port} on {host}: {error.strerror or error}")


def _unprivileged_port_start() -> int:
    """The lowest port any user may listen on (Linux: net.ipv4.ip_unprivileged_port_start)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").read_text())
    except (OSError, ValueError):
        return 1024


# -D properties that say where and how a server runs, not what it measures: the driver sets
# http.address, http.port and pidfile.path itself (Server.command), the staged start script adds
# user.dir; play.http.secret.key is what servers started before the secret moved to the
# environment had.
WHERE_NOT_WHAT = frozenset({"http.address", "http.port", "play.http.secret.key", "pidfile.path", "user.dir"})
# The environment variable the server's secret goes in (see Server.child_env).
SECRET_VARIABLE = "APPLICATION_SECRET"


@dataclass(frozen=True)
class HttpAnswer:
    """What a GET got: the HTTP status and body, or (status None) why nothing answered."""

    status: int | None
    body: bytes = b""
    reason: str = ""

    @property
    def ok(self) -> bool:
        """A 2xx answer: what http_get returns the body of."""
        return self.status is not None and 200 <= self.status < 300

    def describe(self, limit: int = 200) -> str:
        """`HTTP 400 Bad Request: <the body's first characters, as text>` (or why there was no answer)."""
        if self.status is None:
            return f"no answer ({self.reason})"
        excerpt = body_excerpt(self.body, limit)
        return f"HTTP {self.status} {self.reason}".rstrip() + (f": {excerpt}" if excerpt else " (empty body)")


def body_excerpt(body: bytes, limit: int = 200) -> str:
    """A body's first `limit` characters as one line of text (an HTML page without its markup)."""
    text = body[:64 * 1024].decode("utf-8", errors="replace")
    if re.search(r"<(!doctype|html|head|body)\b", text[:1000], re.I):
        text = re.sub(r"<(head|style|script)\b.*?</\1\s*>", " ", text, flags=re.I | re.S)
        text = html.unescape(re.sub(r"<[^>]*>", " ", text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


def http_fetch(url: str, timeout: float = 10, method: str = "GET") -> HttpAnswer:
    """A GET's (or an empty POST's) status and body, also when the server answers an error;
    status None when it does not answer at all (refused, unreachable, timed out)."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return HttpAnswer(response.status, response.read(), response.reason or "")
    except urllib.error.HTTPError as error:
        try:
            body = error.read()
        except OSError:
            body = b""
        return HttpAnswer(error.code, body, str(error.reason or ""))
    except (urllib.error.URLError, OSError) as error:
        return HttpAnswer(None, b"", str(getattr(error, "reason", None) or error))


def http_get(url: str, timeout: float = 10) -> bytes | None:
    """The body of a GET, or None when the server does not answer (or answers an error:
    http_fetch says which)."""
    answer = http_fetch(url, timeout)
    return answer.body if answer.ok else None


def url_host(host: str) -> str:
    """An address as a URL writes it (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host else host


# The CPUs this process could use when it started, before `scripts/lab run` pinned it to the
# load generator's.
START_CPUS = frozenset(os.sched_getaffinity(0))


def jvm_options(server_cpus: str | None) -> tuple[str, ...]:
    """The server JVM's options. A pinned server starts on every core, so that its start-up
    (class loading, the JIT's first compiles) takes seconds less, and is pinned once it answers
    (Server.start); -XX:ActiveProcessorCount makes it size itself for its own cores meanwhile:
    Runtime.availableProcessors, and with it Akka's and Netty's pools, the JIT's and G1's thread
    counts and the server-class test, read that count instead of the cores it may run on
    (os_linux.cpp, os::active_processor_count)."""
    if server_cpus is None:
        return Server.JVM_OPTIONS
    return (*Server.JVM_OPTIONS, f"-XX:ActiveProcessorCount={len(parse_cpu_list(server_cpus))}")


def _move_threads(tids: list[int], cpus: set[int], what: str) -> tuple[int, int]:
    """Set the CPUs of each of these threads still alive to `cpus`: (threads seen, threads that
    were elsewhere and moved). `what` names them in an error ("thread", "JIT compiler thread")."""
    seen = moved = 0
    for tid in tids:
        try:
            if os.sched_getaffinity(tid) != cpus:
                os.sched_setaffinity(tid, cpus)
                moved += 1
            seen += 1
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except OSError as error:
            raise ServerFailed(f"the server's {what} {tid} could not be pinned to CPU "
                               f"{describe_cpus(cpus)}: {error.strerror or error}")
    return seen, moved


def pin_group(pgid: int, cpus: set[int], passes: int = 50) -> int:
    """Pin every thread of every process in a process group to `cpus`; the number of threads.

    Passes until one finds nothing left to pin: a thread started during a pass may have copied
    its creator's mask before the creator was pinned. After that, new threads inherit the pinned
    mask of the thread that creates them (sched_setaffinity(2))."""
    for _ in range(passes):
        changed = threads = 0
        for pid in group_pids(pgid):
            try:
                tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
            except OSError:
                continue
            seen, moved = _move_threads(tids, cpus, "thread")
            threads += seen
            changed += moved
        if not changed:
            return threads
    raise ServerFailed(f"the server's threads could not all be pinned to CPU {describe_cpus(cpus)} "
                       f"in {passes} passes: it keeps starting new ones")


class Server:
    """The staged Play server, on loopback (or the address `scripts/lab serve --listen` chose),
    pinned to its cores once it answers, with a fresh secret."""

    # Where measure() gets the server's CPU time: its process group, in /proc.
    cpu_source = "proc"
    # The collector, explicitly: sized for one core, HotSpot would call the machine "not server
    # class" and pick Serial (gcConfig.cpp, select_gc_ergonomically; os.cpp,
    # is_server_class_machine: at least 2 processors and ~1.8 GB). Production Play servers have
    # more cores and get G1, so the labs run what production runs.
    JVM_OPTIONS = ("-XX:+UseG1GC",)

    def __init__(self, script: Path, port: int, log_path: Path, server_cpus: str | None,
                 properties: dict[str, str], heap: str = "1g", host: str = "127.0.0.1",
                 env: dict[str, str] | None = None, extra_jvm_options: tuple[str, ...] = (),
                 cpu_group: cpulimit.Group | None = None):
        self.script = script
        # The control group whose CPU limit the server runs under (pul.cpulimit; None: none).
        self.cpu_group = cpu_group
        # JVM options on top of jvm_options() (a profiled server's deeper JFR stacks).
        self.extra_jvm_options = extra_jvm_options
        self.host = host
        self.port = port
        self.log_path = log_path
        self.server_cpus = server_cpus
        self.properties = properties
        self.heap = heap
        # Added to the driver's environment (a database's address and password).
        self.env = env or {}
        self.child: Child | None = None
        # Each JIT compiler thread's CPU ticks at its last reading, by thread id (jit_cpu_seconds).
        self._compiler_ticks: dict[str, int] = {}

    @property
    def base_url(self) -> str:
        return f"http://{url_host(self.host)}:{self.port}"

    def command(self) -> list[str]:
        # No secret here: a command line is readable by every user of the machine (ps,
        # /proc/PID/cmdline). The secret goes by environment instead (child_env).
        props = {
            "http.address": self.host,
            "http.port": str(self.port),
            "pidfile.path": "/dev/null",
            **self.properties,
        }
        args = [str(self.script), f"-J-Xms{self.heap}", f"-J-Xmx{self.heap}",
                *(f"-J{option}" for option in self.jvm_options()),
                *(f"-D{k}={v}" for k, v in props.items())]
        if self.server_cpus is not None:
            # Every core the driver was given, not the load generator's that `run` pins the
            # driver itself to (a child inherits its parent's mask): start() pins it later.
            args = ["taskset", "-c", describe_cpus(START_CPUS), *args]
        if self.cpu_group is not None:
            # Outermost: the JVM starts inside the group, and sizes its pools from the quota.
            args = self.cpu_group.command(args)
        return args

    def jvm_options(self) -> tuple[str, ...]:
        # In a CPU limit's group the JVM counts its processors itself, from the quota, as it does in
        # a container: -XX:ActiveProcessorCount would override that count (os::active_processor_count
        # reads the flag before the container), so the pinned server's count is left out there.
        pinned = None if self.cpu_group is not None else self.server_cpus
        return (*jvm_options(pinned), *self.extra_jvm_options)

    def child_env(self) -> dict[str, str]:
        """The server's environment: the driver's, self.env, and a secret generated per start (the
        lab never ships a production secret), which every lab's application.conf reads as
        `play.http.secret.key = ${?APPLICATION_SECRET}`."""
        return {**os.environ, **self.env, SECRET_VARIABLE: secrets.token_urlsafe(48)}

    def start(self, children: Children, progress: Progress, timeout: float = 90) -> None:
        check_port(self.port, self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        progress.step(f"starting the server on {self.base_url}"
                      + (f", pinned to CPU {self.server_cpus}" if self.server_cpus is not None else "")
                      + (f", under a CPU limit of {self.cpu_group.limit.describe()}" if self.cpu_group else ""))
        self._compiler_ticks = {}
        self.child = children.start(self.command(), env=self.child_env(), stdout=self._log,
                                    name="play server")
        deadline = time.monotonic() + timeout
        while True:
            if self.child.poll() is not None:
                raise ServerFailed(f"the server exited with code {self.child.popen.returncode} while starting. "
                                   f"Last lines of {self.log_path}:\n{_tail(self.log_path)}")
            if self.get("/status", timeout=2) is not None:
                progress.note(f"server answered after {progress.elapsed():.1f}s")
                if self.server_cpus is not None:
                    pin_group(self.child.pid, parse_cpu_list(self.server_cpus))
                return
            if time.monotonic() > deadline:
                raise ServerFailed(f"the server did not answer within {timeout:.0f}s. "
                                   f"Last lines of {self.log_path}:\n{_tail(self.log_path)}")
            progress.update("waiting for the server to answer /status")
            time.sleep(0.3)

    def alive(self) -> bool:
        return self.child is not None and self.child.poll() is None

    def get(self, path: str, timeout: float = 10) -> bytes | None:
        return http_get(self.base_url + path, timeout)

    def pools(self) -> dict:
        body = self.get("/pools")
        if body is None:
            raise ServerFailed(f"the server did not answer /pools. Last lines of {self.log_path}:\n{self.log_tail()}")
        return json.loads(body)

    def cpu_seconds(self) -> float:
        """CPU time the server has used so far (its whole process group)."""
        return group_cpu_seconds(self.child.pid) if self.child else 0.0

    def _compiler_tasks(self) -> list[Path]:
        """The JVM's JIT compiler threads ("C1/C2 CompilerThread"), as /proc task folders."""
        if self.child is None:
            return []
        found = []
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{self.child.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    if "CompilerThre" in (task / "comm").read_text():
                        found.append(task)
        return found

    def jit_cpu_seconds(self) -> float | None:
        """CPU time of the JVM's JIT compiler threads so far, or None if it has none to read. CPU,
        not the elapsed compile time /pools reports: on a busy core a compile takes long while
        using little of it."""
        for task in self._compiler_tasks():
            if (fields := stat_fields(task / "stat")) is not None:
                self._compiler_ticks[task.name] = cpu_ticks(fields)
        # Summed over every compiler thread seen, the ones that have exited since included (HotSpot
        # stops an idle dynamic one, UseDynamicNumberOfCompilerThreads): a total that fell when one
        # exited read as a round without compiles, and its compiles as the requests' CPU.
        return sum(self._compiler_ticks.values()) / CLOCK_TICKS if self._compiler_ticks else None

    def release_compiler(self) -> bool:
        """Let the JIT compiler threads run on every core the driver was given, the load
        generator's too; False where there is nothing to move (no pinned server of ours).

        For warm-up only: pinned with the server, on one core, a compiler thread gets about one
        runnable thread's share of it, and the compiles that make the server fast took minutes
        (a server calling WS still used 20% of the core for them after 8 rounds). A production server's
        compiler threads run on its other cores. pin_compiler() puts them back before anything
        is measured."""
        if self.server_cpus is None or self.child is None or START_CPUS == set(parse_cpu_list(self.server_cpus)):
            return False
        self._place_compiler(set(START_CPUS))
        return bool(self._compiler_tasks())

    def pin_compiler(self, passes: int = 20) -> None:
        """Pin the JIT compiler threads back to the server's cores (see release_compiler), in
        passes until one finds nothing left to move: a compiler thread that starts another one
        during a pass may have given it the roaming mask."""
        if self.server_cpus is None:
            return
        cpus = parse_cpu_list(self.server_cpus)
        for _ in range(passes):
            if not self._place_compiler(cpus):
                return
        raise ServerFailed(f"the server's JIT compiler threads could not all be pinned to CPU "
                           f"{describe_cpus(cpus)} in {passes} passes")

    def _place_compiler(self, cpus: set[int]) -> int:
        """Set the compiler threads' CPUs; how many it moved (those already there stay). A thread
        the JVM starts later copies the mask of the compiler thread that starts it
        (sched_setaffinity(2))."""
        tids = [int(task.name) for task in self._compiler_tasks()]
        return _move_threads(tids, cpus, "JIT compiler thread")[1]

    def log_tail(self, lines: int = 25) -> str:
        return _tail(self.log_path, lines)

    def stop(self, children: Children) -> None:
        if self.child is not None:
            children.stop(self.child, grace=15)
            self.child = None
            self._log.close()
