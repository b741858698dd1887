"""A server under a CPU limit: a control group of its own for each run, with the limit as its quota.

A container's CPU limit (Kubernetes `resources.limits.cpu`, `docker run --cpus`, systemd's
`CPUQuota=`) is a CFS bandwidth quota: the group's threads may run QUOTA microseconds of CPU in
every PERIOD, then wait, throttled, for the next period. The JVM reads that quota when it starts
and sizes itself from it: HotSpot's active processor count is the CPUs it may run on, capped at
quota / period rounded up (CgroupSubsystem::active_processor_count, os/linux/
cgroupSubsystem_linux.cpp; CPU shares no longer count since JDK 19 and 17.0.5, JDK-8281181). So the
server must be in its group before the JVM starts: `command()` wraps the server's command in one
that joins the group first.

Two kinds of machine:
- cgroup v1 (the CI machine kind, where systemd is not PID 1): the cpu controller's own hierarchy,
  a child group with cpu.cfs_quota_us and cpu.cfs_period_us, made and removed here.
- cgroup v2 with systemd (the lab VM): a transient scope (`systemd-run --scope`, CPUQuota= and
  CPUQuotaPeriodSec=), which systemd removes once its processes are gone. systemd owns the
  hierarchy there, so the labs ask it rather than write cpu.max under its feet.
Anywhere else, available() says why before any build.

A v1 group's name carries its driver's tag (pul-cpu-PID-START-UID), so the watchdog and a later
run (pul.watchdog) remove the group of a driver that was killed, once its processes are stopped.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError, UsageError
from .procs import driver_tag

PREFIX = "pul-cpu-"
# The kernel's bounds for a CFS period (max_cfs_quota_period 1 s, min_cfs_quota_period 1 ms, in
# kernel/sched; tg_set_cfs_bandwidth refuses a quota below the latter too).
MIN_PERIOD_US = 1_000
MAX_PERIOD_US = 1_000_000
MIN_QUOTA_US = 1_000
# Kubernetes' and Docker's period (cpu.cfs_period_us's default).
DEFAULT_PERIOD_US = 100_000


class LimitUnavailable(LabError):
    """This machine cannot run a server under a CPU limit (said before any build)."""

    exit_code = 2


@dataclass(frozen=True)
class Limit:
    """CPUS of CPU time (0.5: half a core) in every PERIOD_US microseconds."""

    cpus: float
    period_us: int = DEFAULT_PERIOD_US

    def __post_init__(self):
        if not (isinstance(self.cpus, (int, float)) and math.isfinite(self.cpus) and self.cpus > 0):
            raise UsageError(f"--cpu-limit must be a number of CPUs above 0 (0.5, 1, 2), not {self.cpus!r}")
        if not MIN_PERIOD_US <= self.period_us <= MAX_PERIOD_US:
            raise UsageError(f"--cpu-period-ms must be between {MIN_PERIOD_US // 1000} and "
                             f"{MAX_PERIOD_US // 1000} (the kernel's bounds), not {self.period_us / 1000:g}")
        if self.quota_us < MIN_QUOTA_US:
            raise UsageError(f"{self.cpus:g} CPU of a {self.period_us / 1000:g} ms period is "
                             f"{self.quota_us} µs, below the kernel's smallest quota ({MIN_QUOTA_US} µs): "
                             "raise --cpu-limit or --cpu-period-ms")

    @property
    def quota_us(self) -> int:
        return round(self.cpus * self.period_us)

    @property
    def processors(self) -> int:
        """The processors HotSpot counts under this limit, on a machine with at least as many."""
        return math.ceil(self.quota_us / self.period_us)

    def describe(self) -> str:
        return f"{self.cpus:g} CPU ({self.quota_us / 1000:g} ms of CPU every {self.period_us / 1000:g} ms)"


@dataclass(frozen=True)
class Hierarchy:
    """Where this machine's CPU limits are made: `kind` "v1" (`root`: the directory a group is
    made in) or "v2" (systemd's scopes; `root`: the cgroup2 mount)."""

    kind: str
    root: Path


def _mounts(mountinfo: Path) -> list[tuple[Path, str, set[str]]]:
    """(mount point, file system type, super options) of each line of a mountinfo file."""
    found = []
    for line in mountinfo.read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 5 and len(tail) >= 3:
            point = fields[4].replace("\\040", " ")
            found.append((Path(point), tail[0], set(tail[2].split(","))))
    return found


def _own_groups(cgroup_file: Path) -> dict[str, str]:
    """This process's group per controller ("" for the v2 hierarchy), from /proc/self/cgroup."""
    groups = {}
    for line in cgroup_file.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = path
    return groups


def find_hierarchy(mountinfo: Path = Path("/proc/self/mountinfo"), cgroup_file: Path = Path("/proc/self/cgroup"),
                   systemd_run: str | None = None, systemd_running: bool | None = None) -> Hierarchy:
    """Where a CPU limit can be made here, or LimitUnavailable saying what was looked for."""
    mounts = _mounts(mountinfo)
    own = _own_groups(cgroup_file)
    for point, kind, options in mounts:
        if kind == "cgroup" and "cpu" in options:
            root = point / own.get("cpu", "/").lstrip("/")
            if not os.access(root, os.W_OK):
                raise LimitUnavailable(f"the cpu controller's hierarchy ({root}) is not writable by this user: "
                                       "a CPU limit needs root here (sudo scripts/lab ...)")
            return Hierarchy("v1", root)
    v2 = [point for point, kind, _ in mounts if kind == "cgroup2"]
    if v2:
        if systemd_running is None:
            systemd_running = Path("/run/systemd/system").is_dir()
        systemd_run = systemd_run if systemd_run is not None else shutil.which("systemd-run")
        if systemd_running and systemd_run:
            if os.geteuid() != 0:
                raise LimitUnavailable("a CPU limit needs root on this machine (systemd-run --scope "
                                       "in the system manager): sudo scripts/lab ...")
            return Hierarchy("v2", v2[0])
        raise LimitUnavailable("this machine has cgroup v2 but no systemd to make a scope with a CPU quota "
                               "(systemd-run, /run/systemd/system): run the lab in the lab VM, or on a "
                               "machine with systemd or a cgroup v1 cpu controller")
    raise LimitUnavailable("no cgroup cpu controller is mounted on this machine (neither cgroup v1's "
                           "cpu nor cgroup v2): a CPU limit cannot be set here")


def group_name(tag: str) -> str:
    """The group (or scope) of the driver with TAG "PID:START:UID"."""
    return PREFIX + tag.replace(":", "-")


def tag_of(name: str) -> str | None:
    """The driver tag a group's name carries, or None for a name that is not one of ours."""
    if not name.startswith(PREFIX):
        return None
    name = name.removesuffix(".scope")
    parts = name[len(PREFIX):].split("-")
    return ":".join(parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


class Group:
    """One driver's CPU limit: made by `make()`, joined by the command `command()` gives, read by
    `stats()`, removed by `remove()` once its processes are gone."""

    def __init__(self, limit: Limit, hierarchy: Hierarchy, tag: str | None = None):
        self.limit = limit
        self.hierarchy = hierarchy
        self.name = group_name(tag or driver_tag())
        self.path = hierarchy.root / self.name if hierarchy.kind == "v1" else None

    def make(self) -> None:
        if self.hierarchy.kind != "v1":
            return
        try:
            self.path.mkdir(exist_ok=True)
            (self.path / "cpu.cfs_period_us").write_text(f"{self.limit.period_us}\n")
            (self.path / "cpu.cfs_quota_us").write_text(f"{self.limit.quota_us}\n")
        except OSError as error:
            self.remove()
            raise LimitUnavailable(f"could not make the CPU limit's group {self.path}: {error}")

    def command(self, argv: list[str]) -> list[str]:
        """ARGV run inside the group from its first instruction."""
        if self.hierarchy.kind == "v1":
            # The shell joins the group, then becomes the command: the JVM starts inside it.
            return ["sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', str(self.path), *argv]
        return ["systemd-run", "--scope", "--quiet", "--collect", f"--unit={self.name}",
                "-p", f"CPUQuota={self.limit.cpus * 100:g}%",
                "-p", f"CPUQuotaPeriodSec={self.limit.period_us}us", "--", *argv]

    def stat_file(self, pid: int | None = None) -> Path:
        """The group's cpu.stat: v1's own; v2's from the cgroup PID is in (systemd's scope)."""
        if self.hierarchy.kind == "v1":
            return self.path / "cpu.stat"
        if pid is None:
            raise LimitUnavailable("a scope's statistics are found from a process in it")
        path = _own_groups(Path(f"/proc/{pid}/cgroup")).get("", "")
        return self.hierarchy.root / path.lstrip("/") / "cpu.stat"

    def stats(self, pid: int | None = None) -> dict:
        return read_stats(self.stat_file(pid))

    def remove(self) -> bool:
        """Remove a v1 group (a scope goes by itself); False if processes still hold it."""
        if self.path is None or not self.path.exists():
            return True
        try:
            self.path.rmdir()
        except OSError:
            return False
        return True


def read_stats(path: Path) -> dict:
    """cpu.stat as periods, throttled periods and seconds throttled, on v1 and v2 alike."""
    raw = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().isdigit():
            raw[key] = int(value)
    if "throttled_usec" in raw:
        throttled = raw["throttled_usec"] / 1e6
    else:
        throttled = raw.get("throttled_time", 0) / 1e9
    return {"periods": raw.get("nr_periods", 0), "throttled_periods": raw.get("nr_throttled", 0),
            "throttled_seconds": throttled}


def difference(before: dict, after: dict) -> dict:
    """What happened between two read_stats(), with the share of the periods that were throttled."""
    delta = {key: after[key] - before[key] for key in ("periods", "throttled_periods", "throttled_seconds")}
    delta["throttled_seconds"] = round(delta["throttled_seconds"], 6)
    delta["throttled_share"] = round(delta["throttled_periods"] / delta["periods"], 4) if delta["periods"] else 0.0
    return delta


class Sampler:
    """cpu.stat read HZ times a second by a thread of the driver, outside the group (a sampler in
    the server would be throttled with it, and miss the very pauses it should show). `finish()`
    gives the share of each interval the group spent throttled, for the timeline."""

    def __init__(self, stat_file: Path, hz: int):
        self.stat_file, self.interval = stat_file, 1.0 / hz
        self.samples: list[tuple[float, dict]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu.stat sampler", daemon=True)

    def start(self) -> "Sampler":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            with contextlib.suppress(OSError, ValueError):
                self.samples.append((time.monotonic() - self._started, read_stats(self.stat_file)))
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def finish(self, max_points: int) -> dict:
        self._stop.set()
        self._thread.join(timeout=5)
        return throttling_series(self.samples, max_points)


def throttling_series(samples: list[tuple[float, dict]], max_points: int) -> dict:
    """Seconds since the first sample, and per interval ending at each: the share of the interval
    the group waited throttled (its throttled time over the interval's length) and the periods
    throttled in it; at most `max_points` points (neighbouring intervals averaged)."""
    from .timeline import _bins, _shrink

    times, waited, throttled = [], [], []
    for (t0, s0), (t1, s1) in zip(samples, samples[1:]):
        if t1 <= t0:
            continue
        times.append(t1)
        waited.append(round(min(1.0, max(0.0, (s1["throttled_seconds"] - s0["throttled_seconds"]) / (t1 - t0))), 3))
        throttled.append(max(0, s1["throttled_periods"] - s0["throttled_periods"]))
    bins = _bins(len(times), max_points)
    return {"t_s": [round(t, 2) for t in _shrink(times, bins, digits=2)],
            "throttled_share": _shrink(waited, bins, digits=3),
            "throttled_periods": _shrink(throttled, bins)}


def leftover_groups(hierarchy: Hierarchy) -> list[tuple[Path, str]]:
    """The v1 groups of drivers, each with its driver's tag (only this user's: made by them)."""
    if hierarchy.kind != "v1":
        return []
    found = []
    with contextlib.suppress(OSError):
        for path in sorted(hierarchy.root.glob(PREFIX + "*")):
            tag = tag_of(path.name)
            with contextlib.suppress(OSError):
                if tag and path.is_dir() and path.stat().st_uid == os.geteuid():
                    found.append((path, tag))
    return found


def remove_leftovers(is_target) -> list[str]:
    """Remove the v1 groups whose driver's tag `is_target` accepts (their processes stopped first)."""
    try:
        hierarchy = find_hierarchy()
    except (LimitUnavailable, OSError):
        return []
    removed = []
    for path, tag in leftover_groups(hierarchy):
        if is_target(tag):
            with contextlib.suppress(OSError):
                path.rmdir()
                removed.append(str(path))
    return removed


def probe_processors(limit: Limit, java: str = "java", timeout: float = 30) -> int:
    """The processors a JVM started under LIMIT counts (Runtime.availableProcessors), which is
    what sizes its pools: checked before a run, so that a limit the JVM does not see is said."""
    group = Group(limit, find_hierarchy())
    group.make()
    try:
        done = subprocess.run(group.command([java, "-XshowSettings:system", "-version"]), capture_output=True,
                              text=True, timeout=timeout)
    finally:
        group.remove()
    for line in (done.stdout + done.stderr).splitlines():
        if "Effective CPU Count:" in line:
            return int(line.rpartition(":")[2])
    raise LimitUnavailable(f"{java} -XshowSettings:system printed no CPU count under the limit:\n"
                           f"{(done.stdout + done.stderr)[-1000:]}")
