"""The server's listen queue during a run: how full the accept backlog got, and what overflowed.

A connection the server has not yet accepted waits in its listening socket's queue, whose limit
is the backlog the server asked for, capped by net.core.somaxconn. For a listening socket `ss
-ltn` shows that queue's length as Recv-Q and its limit as Send-Q (iproute2's ss, from the kernel's
inet_diag: sk_ack_backlog and sk_max_ack_backlog). When the queue is full the kernel drops the
handshake and counts it in TcpExt ListenOverflows (and ListenDrops) of /proc/net/netstat; the
client sends its SYN again later.

ListenOverflows counts for the whole machine: on a machine running nothing else that listens
under load, the count is the server's.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .sampling import Periodic

NETSTAT = Path("/proc/net/netstat")
# Samples of the queue a second: often enough to catch it full during a step of a few seconds,
# rarely enough that `ss` (one short process, a netlink dump of one socket) costs the load
# generator's core next to nothing.
SAMPLES_PER_SECOND = 10


def tcp_ext_counters(path: Path = NETSTAT) -> dict[str, int]:
    """The TcpExt counters of /proc/net/netstat (a line of names, then a line of values)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    for names, values in zip(lines, lines[1:]):
        if names.startswith("TcpExt:") and values.startswith("TcpExt:"):
            return {name: int(value) for name, value in zip(names.split()[1:], values.split()[1:])}
    return {}


def parse_ss(output: str) -> tuple[int, int] | None:
    """(queue length, limit) of the first LISTEN line of `ss -ltnH`."""
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[0] == "LISTEN":
            return int(fields[1]), int(fields[2])
    return None


class ListenQueueMeter:
    """Samples the listening socket on `port` in a thread from start() to finish()."""

    def __init__(self, port: int, cpus: str | None = None):
        self.port = port
        self.command = ["ss", "-ltnH", f"sport = :{port}"]
        if cpus is not None and shutil.which("taskset"):
            # On the load generator's cores, like ab: the server's core stays the server's.
            self.command = ["taskset", "-c", cpus, *self.command]
        self._sampling = Periodic(SAMPLES_PER_SECOND, self._sample, "listen-queue")
        self.samples: list[int] = []
        self.limit: int | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("ss") is not None and NETSTAT.exists()

    def _sample(self) -> None:
        try:
            done = subprocess.run(self.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  text=True, timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            return
        found = parse_ss(done.stdout)
        if found is not None:
            queued, self.limit = found
            self.samples.append(queued)

    def start(self) -> "ListenQueueMeter":
        self.before = tcp_ext_counters()
        self._sampling.start()
        return self

    def finish(self) -> dict:
        self._sampling.stop()
        after = tcp_ext_counters()
        full = sum(1 for n in self.samples if self.limit is not None and n >= self.limit)
        return {
            "accept_queue_limit": self.limit,
            "accept_queue_max": max(self.samples) if self.samples else None,
            "samples": len(self.samples),
            # Share of the samples that found the queue at its limit (Recv-Q >= Send-Q).
            "full_share": round(full / len(self.samples), 3) if self.samples else None,
            "listen_overflows": _delta(self.before, after, "ListenOverflows"),
            "listen_drops": _delta(self.before, after, "ListenDrops"),
        }


def _delta(before: dict, after: dict, name: str) -> int | None:
    if name not in before or name not in after:
        return None
    return after[name] - before[name]
