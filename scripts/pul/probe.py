"""Light probes that run beside the load: a /status poller and a CPU-time reader."""

from __future__ import annotations

import http.client
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# Below this many answered probes, the 99th percentile is one of the last two samples, so a p99
# would only be the maximum under another name.
SAMPLES_FOR_P99 = 100


class StatusPoller(threading.Thread):
    """GET a path on a fixed schedule while the load runs (an open loop); keep the latencies.

    Probe i is due at start + i x interval and is sent then, on its own thread, however many
    earlier probes are still unanswered; its latency counts from that due moment, so a late send
    is charged too. A closed loop (send, wait for the answer, send the next) would stop asking
    while the server stalls and never measure the probes a user would have sent meanwhile:
    coordinated omission (chapter 5; scripts/openload works the same way).

    Rate-limited on purpose: 20 probes a second add little to the load they observe. At most
    `max_outstanding` probes wait at once; a probe due beyond that is not sent and counts as failed.
    """

    def __init__(self, url: str, interval: float = 0.05, timeout: float = 30, max_outstanding: int = 200):
        super().__init__(daemon=True)
        self.url = url
        self.interval = interval
        self.timeout = timeout
        self.max_outstanding = max_outstanding
        self.latencies_ms: list[float] = []
        self.failures = 0       # no answer: an error, still waiting at finish(), or not sent
        self.not_sent = 0       # due while max_outstanding probes were waiting
        self.scheduled = 0      # probes due so far
        self._outstanding: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._closed = False    # finish() has counted: later answers are ignored
        self._stop_event = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while True:
            due = start + self.scheduled * self.interval
            if self._stop_event.wait(max(0.0, due - time.monotonic())):
                return
            with self._lock:
                self.scheduled += 1
                if len(self._outstanding) >= self.max_outstanding:
                    self.not_sent += 1
                    self.failures += 1
                    continue
                probe = threading.Thread(target=self._probe, args=(due,), daemon=True)
                self._outstanding.add(probe)
            probe.start()

    def _probe(self, due: float) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=self.timeout) as response:
                response.read()
            answered = (time.monotonic() - due) * 1000
        except (urllib.error.URLError, http.client.HTTPException, OSError):
            answered = None
        with self._lock:
            self._outstanding.discard(threading.current_thread())
            if self._closed:
                return
            if answered is None:
                self.failures += 1
            else:
                self.latencies_ms.append(answered)

    def finish(self) -> dict | None:
        """Stop scheduling, give the probes still out until `timeout` to answer, and summarize;
        a probe still unanswered then counts as failed."""
        self._stop_event.set()
        if self.ident is None:  # never started
            return None
        self.join(self.timeout)  # it only sleeps and starts threads: it stops at once
        deadline = time.monotonic() + self.timeout
        while True:
            with self._lock:
                waiting = list(self._outstanding)
            if not waiting or time.monotonic() >= deadline:
                break
            waiting[0].join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            self._closed = True
            self.failures += len(self._outstanding)
            latencies, failures, not_sent, scheduled = list(self.latencies_ms), self.failures, self.not_sent, self.scheduled
        if not latencies and not failures:
            return None
        return summarize(latencies, failures, not_sent, scheduled, self.interval)


def summarize(latencies_ms: list[float], failed: int, not_sent: int, scheduled: int, interval: float) -> dict:
    """The probe's record: counts, and the latency statistics that so many samples can carry."""
    ordered = sorted(latencies_ms)

    def pct(p: float) -> float | None:
        if not ordered:
            return None
        return round(ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))], 2)

    return {"requests": len(ordered), "failed": failed, "not_sent": not_sent, "scheduled": scheduled,
            "interval_ms": round(interval * 1000, 3),
            "mean_ms": round(sum(ordered) / len(ordered), 2) if ordered else None,
            "p50_ms": pct(50),
            "p99_ms": pct(99) if len(ordered) >= SAMPLES_FOR_P99 else None,
            "samples_for_p99": SAMPLES_FOR_P99,
            "max_ms": round(ordered[-1], 2) if ordered else None}


def probe_p99(record: dict) -> float | None:
    """A probe record's p99, or None when it had too few answers to carry one (a record from
    before the open loop has a p99 at any size: the same threshold applies to it)."""
    if record.get("p99_ms") is None or record.get("requests", 0) < record.get("samples_for_p99", SAMPLES_FOR_P99):
        return None
    return record["p99_ms"]


def describe_tail(record: dict) -> str:
    """'p99 12.3 ms (140 answers)', or 'max 227.7 ms (51 answers)' when too few answered for a p99.
    (Not "n=": the book's n is the requests in service, book/src/symbols.md.)"""
    answers = record.get("requests", 0)
    n = f"{answers:,} answer{'' if answers == 1 else 's'}"
    p99 = probe_p99(record)
    if p99 is not None:
        return f"p99 {p99:,.1f} ms ({n})"
    if record.get("max_ms") is not None:
        return f"max {record['max_ms']:,.1f} ms ({n})"
    return "no answer"


def stat_fields(stat: Path) -> list[str] | None:
    """The fields of a /proc stat file (a process's or a thread's) after its command name, which
    may hold spaces and parentheses: state(0) ppid(1) pgrp(2) ... utime(11) stime(12). None where
    the process or thread is gone."""
    try:
        return stat.read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def cpu_ticks(fields: list[str]) -> int:
    """User + system CPU time in stat_fields, in clock ticks (CLOCK_TICKS a second)."""
    return int(fields[11]) + int(fields[12])


def _processes():
    """(pid, stat_fields) of every live process."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat_fields(entry / "stat")) is not None:
            yield int(entry.name), fields


def _cpu_seconds(select) -> float:
    """User + system CPU time of every live process for which select(pid, stat fields) holds."""
    return sum(cpu_ticks(fields) for pid, fields in _processes() if select(pid, fields)) / CLOCK_TICKS


def group_pids(pgid: int) -> list[int]:
    """The live processes of a process group."""
    return [pid for pid, fields in _processes() if int(fields[2]) == pgid]


def group_cpu_seconds(pgid: int) -> float:
    """CPU time of every live process in a process group."""
    return _cpu_seconds(lambda _pid, fields: int(fields[2]) == pgid)


def tree_cpu_seconds(parent: int) -> float:
    """CPU time of a process and its direct children (PostgreSQL's postmaster and its backends)."""
    return _cpu_seconds(lambda pid, fields: pid == parent or int(fields[1]) == parent)
