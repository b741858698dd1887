"""The server's footprint during a run: its threads and resident memory, from /proc.

For a step that sets `watch_footprint`, a thread of the driver reads /proc/PID/status of every
process in the server's process group (the start script execs java, so that is the JVM) a few
times a second: `Threads` counts the kernel's threads, which are the JVM's platform threads (a
virtual thread is not one: it runs mounted on a carrier, a platform thread of its scheduler), and
`VmRSS` is the resident memory (proc(5)). The peaks over the measured runs go in the results.

Where the server's CPU went, by group of threads: each thread's user + system time
(/proc/PID/task/TID/stat) at the start and at the end, grouped by its name with every number after a
separator made N (the kernel keeps 15 characters of a name: "C2 CompilerThre", "GC Thread#N", "ForkJoinPool-N-",
"application-akk"). Threads that ended in between took their time with them, but the process
keeps it (its own stat counts the threads that exited): that remainder is `ended_threads`, where a
pool that starts a thread per task puts its work.
"""

from __future__ import annotations

import re
from pathlib import Path

from .probe import CLOCK_TICKS, group_pids
from .sampling import Periodic

# Samples a second: enough to see the peak of a few seconds' load, next to nothing for the
# load generator's core the driver runs on.
SAMPLES_PER_SECOND = 5


def read_status(pid: int, proc: Path = Path("/proc")) -> tuple[int, int] | None:
    """(threads, resident kB) of one process, None if it is gone."""
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return None
    threads = re.search(r"^Threads:\s+(\d+)", text, re.M)
    rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
    if not threads:
        return None
    return int(threads.group(1)), int(rss.group(1)) if rss else 0


def thread_group(name: str) -> str:
    """A thread's group: its name with each number after a separator made N, and a last such
    number dropped with its separator, so that the kernel's 15 characters put one pool in one
    group ("pool-12-thread-" and "pool-1-thread-1": "pool-N-thread"; "GC Thread#3": "GC Thread";
    "C2 CompilerThre" keeps its 2)."""
    grouped = re.sub(r"(?<=[-#_ .])\d+", "N", name).rstrip("-#_ .")
    return re.sub(r"[-#_ .]N$", "", grouped).rstrip("-#_ .") or "?"


def _ticks(stat_text: str) -> tuple[str, int] | None:
    """(name, user + system ticks) from a /proc stat line (the name may hold spaces and parens)."""
    name, _, rest = stat_text.partition(" (")[2].rpartition(") ")
    fields = rest.split()
    if len(fields) < 13:
        return None
    return name, int(fields[11]) + int(fields[12])


def read_threads(pid: int, proc: Path = Path("/proc")) -> tuple[dict[int, tuple[str, int]], int] | None:
    """({thread id: (name, ticks)}, the process's ticks, ended threads included); None if it is gone."""
    try:
        process = _ticks((proc / str(pid) / "stat").read_text())
        tasks = {}
        for task in (proc / str(pid) / "task").iterdir():
            try:
                found = _ticks((task / "stat").read_text())
            except OSError:
                continue  # ended while being read
            if found and task.name.isdigit():
                tasks[int(task.name)] = found
    except OSError:
        return None
    return (tasks, process[1]) if process else None


def thread_cpu(before: tuple[dict, int], after: tuple[dict, int], ticks_per_second: int,
               top: int = 8) -> dict:
    """The CPU seconds each group of threads used between two read_threads(): the `top` groups,
    the rest as "other", and what threads that ended in between used."""
    (tasks_before, process_before), (tasks_after, process_after) = before, after
    groups: dict[str, list] = {}
    for tid, (name, ticks) in tasks_after.items():
        # A thread started in between counts from zero; a reused id with another name, too.
        was = tasks_before.get(tid)
        used = ticks - (was[1] if was and was[0] == name else 0)
        entry = groups.setdefault(thread_group(name), [0, 0])
        entry[0] += max(0, used)
        entry[1] += 1
    live = sum(ticks for ticks, _ in groups.values())
    ended = max(0, (process_after - process_before) - live)
    ranked = sorted(groups.items(), key=lambda item: -item[1][0])
    shown = [{"name": name, "cpu_seconds": round(ticks / ticks_per_second, 2), "threads": count}
             for name, (ticks, count) in ranked[:top] if ticks]
    rest = sum(ticks for _, (ticks, _) in ranked[top:])
    if rest:
        shown.append({"name": "other", "cpu_seconds": round(rest / ticks_per_second, 2),
                      "threads": sum(count for _, (_, count) in ranked[top:])})
    return {"groups": shown, "ended_threads_cpu_seconds": round(ended / ticks_per_second, 2),
            "cpu_seconds": round((process_after - process_before) / ticks_per_second, 2)}


class FootprintMeter:
    """Samples a process group's threads and resident memory from start() to finish()."""

    def __init__(self, pgid: int):
        self.pgid = pgid
        self.samples: list[tuple[int, int]] = []
        # The JVM's threads at the start (the start script execs java: the group's leader is it).
        self.threads_before = read_threads(pgid)
        self._sampling = Periodic(SAMPLES_PER_SECOND, self.sample, "footprint", at_once=True)

    def sample(self) -> None:
        found = [s for s in (read_status(pid) for pid in group_pids(self.pgid)) if s]
        if found:
            self.samples.append((sum(t for t, _ in found), sum(r for _, r in found)))

    def start(self) -> "FootprintMeter":
        self._sampling.start()
        return self

    def finish(self) -> dict | None:
        self._sampling.stop()
        if not self.samples:
            return None
        threads = [t for t, _ in self.samples]
        rss = [r for _, r in self.samples]
        found = {"samples": len(self.samples),
                 "threads_max": max(threads), "threads_median": sorted(threads)[len(threads) // 2],
                 "rss_max_mb": round(max(rss) / 1024, 1), "rss_median_mb": round(sorted(rss)[len(rss) // 2] / 1024, 1)}
        after = read_threads(self.pgid)
        if self.threads_before and after:
            found["thread_cpu"] = thread_cpu(self.threads_before, after, CLOCK_TICKS)
        return found
