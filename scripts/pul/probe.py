"""Light probes that run beside the load: a /status poller and a CPU-time reader."""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class StatusPoller(threading.Thread):
    """GET a path every `interval` seconds while the load runs; keep the latencies.

    Rate-limited on purpose: a closed-loop probe (ab -c 1) would add hundreds of
    requests per second to the load it is meant to observe.
    """

    def __init__(self, url: str, interval: float = 0.05, timeout: float = 30):
        super().__init__(daemon=True)
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self.latencies_ms: list[float] = []
        self.failures = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            started = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=self.timeout) as response:
                    response.read()
                self.latencies_ms.append((time.perf_counter() - started) * 1000)
            except (urllib.error.URLError, OSError):
                self.failures += 1
            self._stop_event.wait(max(0.0, self.interval - (time.perf_counter() - started)))

    def finish(self) -> dict | None:
        self._stop_event.set()
        self.join(self.timeout + 5)
        if not self.latencies_ms:
            return None if not self.failures else {"requests": 0, "failed": self.failures}
        ordered = sorted(self.latencies_ms)

        def pct(p: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 2)

        return {"requests": len(ordered), "failed": self.failures,
                "mean_ms": round(sum(ordered) / len(ordered), 2),
                "p50_ms": pct(50), "p99_ms": pct(99), "max_ms": round(ordered[-1], 2)}


def _cpu_seconds(select) -> float:
    """User + system CPU time of every live process for which select(pid, stat fields) holds."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state(0) ppid(1) pgrp(2) ... utime(11) stime(12)
        if select(int(entry.name), fields):
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def group_cpu_seconds(pgid: int) -> float:
    """CPU time of every live process in a process group."""
    return _cpu_seconds(lambda _pid, fields: int(fields[2]) == pgid)


def tree_cpu_seconds(parent: int) -> float:
    """CPU time of a process and its direct children (PostgreSQL's postmaster and its backends)."""
    return _cpu_seconds(lambda pid, fields: pid == parent or int(fields[1]) == parent)
