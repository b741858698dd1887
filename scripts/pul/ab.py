"""Running a lab's bench.sh and reading what ApacheBench printed."""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import LoadFailed, NothingCompleted
from .procs import Children
from .progress import Progress


@dataclass
class LoadResult:
    """One run of a load tool (ab, or wrk read into the same shape), in the units the results files use."""

    command: str
    complete: int
    failed: int
    non_2xx: int
    requests_per_sec: float
    duration_s: float
    mean_ms: float            # mean latency, integrated from ab's 0..100 % percentiles
    ab_mean_ms: float | None  # ab's own "Total" mean (whole milliseconds)
    ab_time_per_request_ms: float  # ab's "Time per request (mean)" = c * duration / complete
    percentiles: dict[int, float] = field(default_factory=dict)  # 0..100 -> ms
    errors: list[str] = field(default_factory=list)

    def pct(self, p: int) -> float:
        return self.percentiles[p]


# ab refuses a concurrency above its MAX_CONCURRENCY ("Invalid Concurrency [Range 0..N]"): 200000 in
# httpd 2.4's support/ab.c and Debian 12's ab (apache2-utils 2.4.71), 20000 in older ones.
# pul.checks.ab_max_concurrency asks the installed ab, and falls back on this.
MAX_CONCURRENCY = 200_000

_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def _find(pattern: str, text: str) -> str | None:
    match = re.search(pattern, text, re.M)
    return match.group(1) if match else None


def parse(output: str, percentiles_csv: str) -> LoadResult:
    """Parse ab's report and its -e percentile file; LoadFailed if ab stopped short."""
    complete = _find(r"^Complete requests:\s+(\d+)", output)
    rps = _find(rf"^Requests per second:\s+{_NUMBER}", output)
    if complete == "0":
        # ab prints no rate and no percentiles then (httpd support/ab.c, output_results: "avoid
        # divide by zero").
        seconds = _find(rf"^Time taken for tests:\s+{_NUMBER}", output)
        raise NothingCompleted(f"ab completed no request in {seconds or '?'} s:\n" + _tail(output))
    if complete is None or rps is None:
        raise LoadFailed("ab did not print a report:\n" + _tail(output))
    percentiles: dict[int, float] = {}
    for line in percentiles_csv.splitlines()[1:]:
        pct, _, ms = line.partition(",")
        if pct.strip().isdigit():
            percentiles[int(pct)] = float(ms)
    if len(percentiles) != 101:
        raise LoadFailed("ab wrote no latency percentiles (nothing completed?):\n" + _tail(output))
    # The quantile function integrates to the mean: trapezoids over 0..100 %.
    mean = sum((percentiles[i] + percentiles[i + 1]) / 2 for i in range(100)) / 100
    total = re.search(r"^Total:\s+(\d+)\s+(\d+)", output, re.M)
    # The command line bench.sh echoes: ab's, or scripts/openload's (which reports in ab's wording).
    command = _find(r"^\$ ((?:ab|openload) .+)$", output) or "ab"
    errors = sorted({line.strip() for line in output.splitlines()
                     if line.startswith(("apr_", "ab: ", "openload: "))})
    return LoadResult(
        command=command,
        complete=int(complete),
        failed=int(_find(r"^Failed requests:\s+(\d+)", output) or 0),
        non_2xx=int(_find(r"^Non-2xx responses:\s+(\d+)", output) or 0),
        requests_per_sec=float(rps),
        duration_s=float(_find(rf"^Time taken for tests:\s+{_NUMBER}", output) or 0),
        mean_ms=round(mean, 3),
        ab_mean_ms=float(total.group(2)) if total else None,
        ab_time_per_request_ms=float(_find(rf"^Time per request:\s+{_NUMBER} \[ms\] \(mean\)$", output) or 0),
        percentiles=percentiles,
        errors=errors,
    )


def nothing_completed(command: str = "ab") -> LoadResult:
    """A run in which no request completed: zero rate, no latencies."""
    return LoadResult(command=command, complete=0, failed=0, non_2xx=0, requests_per_sec=0.0,
                      duration_s=0.0, mean_ms=0.0, ab_mean_ms=None, ab_time_per_request_ms=0.0)


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


@dataclass
class BenchRun:
    """bench.sh started in the background; finish() waits and parses."""

    children: Children
    bench: Path
    variant: str
    base_url: str
    concurrency: int
    requests: int
    time_limit: int
    output: Path
    load_cpus: str | None
    keep_alive: bool = False
    extra_env: dict | None = None

    def start(self) -> "BenchRun":
        self.csv = self.output.with_suffix(".percentiles.csv")
        env = {
            "BASE_URL": self.base_url,
            "CONCURRENCY": str(self.concurrency),
            "REQUESTS": str(self.requests),
            "TIME_LIMIT": str(self.time_limit),
            "PERCENTILES_CSV": str(self.csv),
            "KEEP_ALIVE": "1" if self.keep_alive else "0",
            **(self.extra_env or {}),
        }
        args = [str(self.bench), self.variant]
        if self.load_cpus is not None:
            args = ["taskset", "-c", self.load_cpus, *args]
        self.output.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.output.open("w")
        self.child = self.children.start(args, env={**os.environ, **env}, stdout=self._log,
                                         name=f"ab {self.variant}")
        self.started = time.monotonic()
        return self

    def completed_so_far(self) -> int:
        matches = re.findall(r"^Completed (\d+) requests", self.output.read_text(errors="replace"), re.M)
        return int(matches[-1]) if matches else 0

    def wait(self, progress: Progress | None, server_alive=lambda: True, label: str = "") -> None:
        deadline = self.started + self.time_limit + 45
        while self.child.poll() is None:
            if time.monotonic() > deadline:
                self.children.stop(self.child)
                raise LoadFailed(f"ab did not finish within {self.time_limit + 45}s; stopped it.")
            if not server_alive():
                self.children.stop(self.child)
                return
            if progress:
                progress.update(f"{label or self.variant}: {self.completed_so_far()}/{self.requests} requests")
            # Back as soon as ab ends, not at the next quarter second: the CPU the run used is
            # divided by its elapsed time, and a short run is repeated many times (lab 04: 130).
            try:
                self.child.wait(0.25)
            except subprocess.TimeoutExpired:
                pass
        self.children.stop(self.child)

    def result(self) -> LoadResult:
        self._log.close()
        text = self.output.read_text(errors="replace")
        csv = self.csv.read_text() if self.csv.exists() else ""
        return parse(text, csv)
