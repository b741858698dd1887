"""The server's footprint during a run: its threads and resident memory, from /proc.

For a step that sets `watch_footprint`, a thread of the driver reads /proc/PID/status of every
process in the server's process group (the start script execs java, so that is the JVM) a few
times a second: `Threads` counts the kernel's threads, which are the JVM's platform threads (a
virtual thread is not one: it runs mounted on a carrier, a platform thread of its scheduler), and
`VmRSS` is the resident memory (proc(5)). The peaks over the measured runs go in the results.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from .probe import group_pids

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


class FootprintMeter:
    """Samples a process group's threads and resident memory from start() to finish()."""

    def __init__(self, pgid: int):
        self.pgid = pgid
        self.samples: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        found = [s for s in (read_status(pid) for pid in group_pids(self.pgid)) if s]
        if found:
            self.samples.append((sum(t for t, _ in found), sum(r for _, r in found)))

    def _loop(self) -> None:
        self.sample()
        while not self._stop.wait(1 / SAMPLES_PER_SECOND):
            self.sample()

    def start(self) -> "FootprintMeter":
        self._thread = threading.Thread(target=self._loop, name="footprint", daemon=True)
        self._thread.start()
        return self

    def finish(self) -> dict | None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if not self.samples:
            return None
        threads = [t for t, _ in self.samples]
        rss = [r for _, r in self.samples]
        return {"samples": len(self.samples),
                "threads_max": max(threads), "threads_median": sorted(threads)[len(threads) // 2],
                "rss_max_mb": round(max(rss) / 1024, 1), "rss_median_mb": round(sorted(rss)[len(rss) // 2] / 1024, 1)}
