"""Facts about the machine a result was measured on, stored with every result."""

from __future__ import annotations

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from . import playline


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_model() -> str:
    match = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    return match.group(1).strip() if match else platform.processor() or platform.machine()


def memory_gib() -> float | None:
    match = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    return round(int(match.group(1)) / 1024 / 1024, 1) if match else None


def os_name() -> str:
    match = re.search(r'^PRETTY_NAME="?([^"\n]+)', _read("/etc/os-release"), re.M)
    name = match.group(1) if match else platform.system()
    return f"{name} (kernel {platform.release()})"


def jdk_version(java: str = "java") -> str | None:
    """`vendor runtime-version` of a java (default: the one on PATH)."""
    if not shutil.which(java):
        return None
    out = subprocess.run([java, "-XshowSettings:properties", "-version"], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL).stderr
    vendor = re.search(r"java\.vendor = (.+)", out)
    version = re.search(r"java\.runtime\.version = (.+)", out)
    return " ".join(x.group(1).strip() for x in (vendor, version) if x) or None


def ab_version(ab: str | None) -> str | None:
    if not ab:
        return None
    out = subprocess.run([ab, "-V"], capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    match = re.search(r"Version (\S+)", out)
    return match.group(1) if match else None


def play_version() -> str | None:
    """The Play version the lab builds on now (labs/sbt/plugin/PlayPlugin.scala, for the current line)."""
    try:
        return playline.plugin_versions().get(playline.current())
    except OSError:
        return None


def _cpu_times() -> list[int] | None:
    """The aggregate `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ..."""
    line = _read("/proc/stat").split("\n", 1)[0].split()
    return [int(x) for x in line[1:9]] if line and line[0] == "cpu" else None


class StealMeter:
    """The share of all CPU time the hypervisor gave to other guests (steal) since it was made:
    on a virtual machine, a busy neighbour shows here, not in the load average."""

    def __init__(self):
        self.start = _cpu_times()

    def share(self) -> float | None:
        end = _cpu_times()
        if not self.start or not end:
            return None
        total = sum(end) - sum(self.start)
        return round((end[7] - self.start[7]) / total, 4) if total > 0 else None


# How steady the machine's speed is, measured: a fixed loop on the server's core, counted in short
# samples. On a virtual machine the host may run a vCPU at a fraction of its speed for a moment (a
# neighbour on the same physical core), which no counter in the guest shows (steal stays at 0 on the
# reference machine) but every measured rate does.
STEADINESS_SECONDS = 1.0
STEADINESS_SAMPLE_SECONDS = 0.1
_SPIN = """
import os, sys, time
cpus, seconds, sample = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
if cpus:
    os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
end = time.perf_counter() + seconds
while time.perf_counter() < end:
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < sample:
        for _ in range(1000):
            count += 1
    print(count, flush=True)
"""


def steadiness(cpus: list[int] | None, seconds: float = STEADINESS_SECONDS,
               sample: float = STEADINESS_SAMPLE_SECONDS) -> dict | None:
    """A fixed loop's speed on these cores (None: wherever the scheduler puts it), in samples of
    `sample` seconds over `seconds`: the fastest sample's count, and the median and the least
    sample as shares of it. None where it could not run."""
    command = [sys.executable, "-c", _SPIN, ",".join(map(str, cpus or [])), str(seconds), str(sample)]
    try:
        # Ends by itself after about `seconds`; run() kills it on Ctrl-C or a timeout.
        out = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                             timeout=seconds + 30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    counts = [int(line) for line in out.split() if line.isdigit()]
    if len(counts) < 2 or max(counts) <= 0:
        return None
    best = max(counts)
    return {"samples": len(counts), "sample_s": sample, "cpus": ",".join(map(str, cpus)) if cpus else None,
            # Loop iterations: lets a reader compare the two probes of a run, or two runs.
            "fastest_count": best,
            "median_share": round(statistics.median(counts) / best, 3),
            "least_share": round(min(counts) / best, 3)}


def load_average() -> float:
    """The 1-minute load average: about how many programs wanted a core, lately."""
    return round(os.getloadavg()[0], 2)


# A run that starts above this load average shares the machine: its numbers are not a quiet
# machine's, and the driver says so.
BUSY_LOAD = 1.0


# A run whose server core's fixed loop ran below this share of its fastest at the median, before
# or after the run, was slowed by the host (a hypervisor can do that without a trace in the guest:
# no steal, no counter): its numbers are not a steady machine's, and the driver says so.
STEADY_SHARE = 0.80


def _probe_shares(steadiness: dict | None) -> tuple[dict[str, float], float]:
    """One core's probes (before, after) as shares of their own speed: each probe's median against
    its fastest sample, and the two probes' fastest samples against each other (1.0 without two).
    The second sees a host that slows the core for the whole of one probe, which leaves that probe
    steady against its own fastest sample (lab 05 in a census here: after the run 0.98 at the
    median, with its fastest sample at 65% of the one before)."""
    probes = {when: probe for when, probe in (steadiness or {}).items() if probe}
    fastest = [probe.get("fastest_count") for probe in probes.values()]
    drop = min(fastest) / max(fastest) if len(fastest) == 2 and all(fastest) else 1.0
    return {when: probe["median_share"] for when, probe in probes.items()}, drop


def slowed_warning(steadiness: dict | None, core: str = "the server's core") -> str | None:
    """What to tell a reader whose run the steadiness probes of `core` saw slowed (None: steady, or
    no probe)."""
    medians, drop = _probe_shares(steadiness)
    slow = {when: share for when, share in medians.items() if share < STEADY_SHARE}
    if not slow and drop >= STEADY_SHARE:
        return None
    reasons = []
    if slow:
        where = " and ".join(f"{share:.0%} {when}" for when, share in slow.items())
        reasons.append(f"slower than its fastest at the median ({where} the run, against {STEADY_SHARE:.0%} for "
                       "a steady core)")
    if drop < STEADY_SHARE:
        reasons.append(f"at {drop:.0%} of its speed in one probe against the other (before and after the run)")
    return (f"{core} ran {' and '.join(reasons)}: the host slowed it, and nothing inside this machine "
            "shows why. Every CPU-bound number here is lower than a steady core gives; run again before you keep "
            "them")


# The probes a run's machine facts may hold (pul.run.probed_cores), and the core each one timed.
PROBED_CORES = {"steadiness": "the server's core",
                # Also the labs' databases' (PostgreSQL is pinned beside the load generator).
                "load_steadiness": "the load generator's core"}


def slowed_warnings(facts: dict) -> list[str]:
    """slowed_warning for each core a run's machine facts have probes of, the server's first."""
    return [warning for key, core in PROBED_CORES.items()
            if (warning := slowed_warning(facts.get(key), core))]


def steadiness_share(facts: dict) -> float:
    """How fast the slowest of a run's probed cores ran, as a share of its own fastest: the least
    of every probe's median (pul.run.probed_cores, before and after) and of each core's two probes'
    fastest samples against each other (slowed_warning's two tests). 1.0 with no probe."""
    shares = [1.0]
    for key in PROBED_CORES:
        medians, drop = _probe_shares(facts.get(key))
        shares += [*medians.values(), drop]
    return min(shares)


def busy_warning(load: float) -> str | None:
    if load < BUSY_LOAD:
        return None
    return (f"the machine is busy (load average {load:g}, {os.cpu_count()} cores): other programs compete with "
            "the server and the load generator, so the measurement will be lower and noisier than the model. "
            "Close them and run again for numbers to keep")


def jvm_flags(java: str, jvm_options: list[str]) -> dict:
    """What HotSpot chose with these options: its collector and thread counts (java
    -XX:+PrintFlagsFinal with the server's options, -XX:ActiveProcessorCount among them)."""
    command = [java, *jvm_options, "-XX:+PrintFlagsFinal", "-version"]
    try:
        out = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    flags = dict(re.findall(r"^\s*\S+\s+(\w+)\s+[:]?=\s*(\S+)", out, re.M))
    collectors = [name for name, flag in (("G1", "UseG1GC"), ("Serial", "UseSerialGC"), ("Parallel", "UseParallelGC"),
                                          ("ZGC", "UseZGC"), ("Shenandoah", "UseShenandoahGC")) if flags.get(flag) == "true"]
    return {"options": jvm_options, "gc": collectors[0] if collectors else None,
            **{key: int(flags[name]) for key, name in (("compiler_threads", "CICompilerCount"),
                                                        ("parallel_gc_threads", "ParallelGCThreads"),
                                                        ("concurrent_gc_threads", "ConcGCThreads"))
               if flags.get(name, "").isdigit()}}


def facts(lab_dir: Path, pinning: dict, ab: str | None, load_at_start: float | None = None) -> dict:
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": os_name(),
        "jdk": jdk_version(),
        "play": play_version(),
        "ab": ab_version(ab),
        # Taken before the build: what the machine was doing before this run added its own work.
        "load_average_at_start": load_at_start if load_at_start is not None else load_average(),
        "pinning": pinning,
    }
