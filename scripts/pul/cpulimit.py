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
Anywhere else, find_hierarchy() says why before any build.

A group's name carries its driver's tag and its server's number (pul-cpu-PID-START-UID-N), so the
watchdog and a later run (pul.watchdog) remove the v1 group of a driver that was killed, once its
processes are stopped, and no server reuses another's group or scope name.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import LabError, UsageError
from .procs import driver_tag
from .sampling import Periodic

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
        if abs(self.cpus * 100 - round(self.cpus * 100)) > 1e-9:
            # systemd's CPUQuota= is a percentage, so a limit is whole hundredths of a CPU everywhere.
            raise UsageError(f"--cpu-limit takes hundredths of a CPU (0.25, 0.5, 1.5), not {self.cpus:g}")
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

    def record(self) -> dict:
        """The limit as the results record it (scripts/results.schema.json)."""
        return {"cpus": self.cpus, "period_us": self.period_us, "quota_us": self.quota_us}

    def describe(self) -> str:
        return f"{self.cpus:g} CPU ({self.quota_us / 1000:g} ms of CPU every {self.period_us / 1000:g} ms)"


@dataclass(frozen=True)
class Hierarchy:
    """Where this machine's CPU limits are made: `kind` "v1" (`root`: the directory a group is
    made in) or "v2" (systemd's scopes; `root`: the cgroup2 mount)."""

    kind: str
    root: Path


def _mounts(mountinfo: Path) -> list[tuple[Path, str, str, set[str], set[str]]]:
    """(mount point, the mount's root, file system type, mount options, super options) of each line
    of a mountinfo file (proc(5): fields 4 and 5, 6, and after the " - ")."""
    found = []
    for line in mountinfo.read_text().splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) >= 6 and len(tail) >= 3:
            point = fields[4].replace("\\040", " ")
            found.append((Path(point), fields[3], tail[0], set(fields[5].split(",")), set(tail[2].split(","))))
    return found


def _below(path: str, root: str) -> str:
    """PATH as seen below a mount of ROOT: a container's mount of /docker/ID shows that group as
    its top (as HotSpot reads it, CgroupV1Controller::set_subsystem_path)."""
    root = root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):
        return path[len(root):]
    return path


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
    for point, mount_root, kind, mount_options, options in mounts:
        if kind == "cgroup" and "cpu" in options:
            root = point / _below(own.get("cpu", "/"), mount_root).lstrip("/")
            if not root.is_dir():
                raise LimitUnavailable(f"this process's group in the cpu controller's hierarchy ({root}) is not "
                                       "there: a CPU limit cannot be made below it")
            if "ro" in mount_options:
                raise LimitUnavailable(f"the cpu controller's hierarchy ({point}) is mounted read-only here "
                                       "(a container's, say): a CPU limit cannot be made")
            if not os.access(root, os.W_OK):
                raise LimitUnavailable(f"the cpu controller's hierarchy ({root}) is not writable by this user: "
                                       "a CPU limit needs root here (sudo scripts/lab ...)")
            return Hierarchy("v1", root)
    v2 = [point for point, _, kind, _, _ in mounts if kind == "cgroup2"]
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


def group_name(tag: str, serial: int = 0) -> str:
    """The group (or scope) of the driver with TAG "PID:START:UID", for its server number SERIAL: a
    group of its own per server, so that one left behind never takes the next server's quota, nor
    a scope that systemd has yet to collect its name."""
    return PREFIX + tag.replace(":", "-") + f"-{serial}"


def tag_of(name: str) -> str | None:
    """The driver tag a group's name carries, or None for a name that is not one of ours."""
    if not name.startswith(PREFIX):
        return None
    name = name.removesuffix(".scope")
    parts = name[len(PREFIX):].split("-")
    return ":".join(parts[:3]) if len(parts) == 4 and all(p.isdigit() for p in parts) else None


class Group:
    """One driver's CPU limit: made by `make()`, joined by the command `command()` gives, read from
    `stat_file()`, removed by `remove()` once its processes are gone."""

    def __init__(self, limit: Limit, hierarchy: Hierarchy, tag: str | None = None, serial: int = 0):
        self.limit = limit
        self.hierarchy = hierarchy
        self.name = group_name(tag or driver_tag(), serial)
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
                "-p", f"CPUQuota={round(self.limit.cpus * 100)}%",
                "-p", f"CPUQuotaPeriodSec={self.limit.period_us}us", "--", *argv]

    def stat_file(self, pid: int | None = None) -> Path:
        """The group's cpu.stat: v1's own; v2's from the cgroup PID is in (systemd's scope)."""
        if self.hierarchy.kind == "v1":
            return self.path / "cpu.stat"
        if pid is None:
            raise LimitUnavailable("a scope's statistics are found from a process in it")
        path = _own_groups(Path(f"/proc/{pid}/cgroup")).get("", "")
        return self.hierarchy.root / path.lstrip("/") / "cpu.stat"

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
    """What happened between two read_stats(), with the share of the periods that were throttled.
    throttled_seconds adds up the time each CPU's run queue of the group waited (the kernel's
    throttled_time): on the one core a pinned server runs on, the time its threads waited."""
    delta = {key: after[key] - before[key] for key in ("periods", "throttled_periods", "throttled_seconds")}
    delta["throttled_seconds"] = round(delta["throttled_seconds"], 6)
    delta["throttled_share"] = round(delta["throttled_periods"] / delta["periods"], 4) if delta["periods"] else 0.0
    return delta


class Sampler:
    """cpu.stat read HZ times a second by a thread of the driver, outside the group (a sampler in
    the server would be throttled with it, and miss the very pauses it should show). `finish()`
    gives the periods throttled in each interval, for the timeline."""

    def __init__(self, stat_file: Path, hz: int):
        self.stat_file = stat_file
        self.samples: list[tuple[float, dict]] = []
        self.sampling = Periodic(hz, self._sample, "cpu.stat sampler", at_once=True)

    def _sample(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.samples.append((time.monotonic() - self._started, read_stats(self.stat_file)))

    def start(self) -> "Sampler":
        self._started = time.monotonic()
        self.sampling.start()
        return self

    def finish(self, max_points: int) -> dict:
        self.sampling.stop()
        return throttling_series(self.samples, max_points)


def throttling_series(samples: list[tuple[float, dict]], max_points: int) -> dict:
    """Seconds since the first sample, and per interval ending at each: the periods that ran out
    of quota in it, and their share of the periods in it (as the step's throttled_share); at most
    `max_points` points (neighbouring intervals averaged). (cpu.stat's throttled time adds up
    every CPU's run queue of the group, so it is no share of an interval's time.)"""
    from .timeline import _bins, _shrink

    times, shares, throttled = [], [], []
    for (t0, s0), (t1, s1) in zip(samples, samples[1:]):
        periods = s1["periods"] - s0["periods"]
        if t1 <= t0 or periods < 0:
            continue
        count = max(0, s1["throttled_periods"] - s0["throttled_periods"])
        times.append(t1)
        throttled.append(count)
        shares.append(round(min(1.0, count / periods), 3) if periods else 0.0)
    bins = _bins(len(times), max_points)
    return {"t_s": [round(t, 2) for t in _shrink(times, bins, digits=2)],
            "throttled_share": _shrink(shares, bins, digits=3),
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


def probe_processors(limit: Limit, java: str = "java", timeout: float = 30,
                     hierarchy: Hierarchy | None = None) -> int:
    """The processors a JVM started under LIMIT counts (-XshowSettings:system's "Effective CPU
    Count", what sizes its pools), in HIERARCHY (None: this machine's)."""
    group = Group(limit, hierarchy or find_hierarchy())
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
