"""wrk as a second load generator (bench.sh with LOAD_TOOL=wrk), read into the same shape as ab.

ab is single-threaded; on a small machine it can be the bottleneck for cheap
requests. Running wrk against the same step shows whether ab or the server
was the limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .ab import LoadResult, BenchRun, _tail
from .errors import LoadFailed, NothingCompleted

_SUMMARY = re.compile(r"^PUL-WRK (.+)$", re.M)


def parse(output: str, percentiles_csv: str) -> LoadResult:
    """wrk's output plus the summary line and percentile file of scripts/lib/wrk-report.lua."""
    match = _SUMMARY.search(output)
    if match is None:
        raise LoadFailed("wrk did not print its summary line:\n" + _tail(output))
    fields = {key: float(value) for key, value in (item.split("=", 1) for item in match.group(1).split())}
    percentiles: dict[int, float] = {}
    for line in percentiles_csv.splitlines()[1:]:
        pct, _, ms = line.partition(",")
        if pct.strip().isdigit():
            percentiles[int(pct)] = float(ms)
    if fields["requests"] == 0:
        raise NothingCompleted("wrk completed no requests:\n" + _tail(output))
    if len(percentiles) != 101:
        raise LoadFailed("wrk wrote no latency percentiles:\n" + _tail(output))
    duration_s = fields["duration_us"] / 1e6
    complete = int(fields["requests"])
    socket_errors = int(fields["connect_errors"] + fields["read_errors"] + fields["write_errors"]
                        + fields["timeouts"])
    command = re.search(r"^\$ (wrk .+)$", output, re.M)
    concurrency = re.search(r" -c (\d+)", command.group(1)) if command else None
    errors = sorted({line.strip() for line in output.splitlines() if "Socket errors" in line})
    mean_ms = round(fields["mean_latency_us"] / 1000, 3)
    return LoadResult(
        command=command.group(1) if command else "wrk",
        complete=complete,
        failed=socket_errors,
        non_2xx=int(fields["non_2xx"]),
        requests_per_sec=round(complete / duration_s, 2),
        duration_s=round(duration_s, 3),
        mean_ms=mean_ms,
        ab_mean_ms=None,
        # What ab calls "time per request (mean)": concurrency x duration / requests.
        ab_time_per_request_ms=round(int(concurrency.group(1)) * duration_s * 1000 / complete, 3)
        if concurrency else 0.0,
        percentiles=percentiles,
        errors=errors,
    )


@dataclass
class WrkRun(BenchRun):
    """bench.sh with LOAD_TOOL=wrk: runs for `duration` seconds, not for a number of requests."""

    duration: int = 10
    threads: int = 2

    def start(self) -> "WrkRun":
        self.extra_env = {**(self.extra_env or {}), "LOAD_TOOL": "wrk", "DURATION": str(self.duration),
                          "WRK_THREADS": str(self.threads)}
        super().start()
        return self

    def completed_so_far(self) -> int:
        return 0  # wrk reports only at the end

    def wait(self, progress, server_alive=lambda: True, label: str = "") -> None:
        # wrk has no per-request progress; show its clock instead.
        if progress:
            progress.update(f"{label or self.variant}: wrk for {self.duration}s")
        super().wait(None, server_alive, label)

    def result(self) -> LoadResult:
        self._log.close()
        text = self.output.read_text(errors="replace")
        csv = self.csv.read_text() if self.csv.exists() else ""
        return parse(text, csv)
