"""A timeline of the server's pools during a step's measured runs.

Every lab's server keeps a sampler (labs/instruments/app/instruments/PoolTimeline.java): a thread outside its pools
that reads each pool's busy threads, queued tasks and threads, the JVM's CPU time and its thread
count at a fixed rate. The driver starts it before the measured runs (POST /timeline/start?hz=N)
and takes the samples after them (POST /timeline/stop). Over HTTP, so that it works for a server
on another machine too; the sampler, not the request, keeps the clock, so a starved dispatcher
delays no sample.

What goes in the results (a variant's `timeline`) is small: at most MAX_POINTS points a series,
neighbouring samples averaged where there were more.
"""

from __future__ import annotations

import json

from .server import http_fetch

# Samples a second (the driver's default; --timeline-hz changes it, 0 turns the timeline off).
DEFAULT_HZ = 20
# The server's limit (PoolTimeline.MAX_HZ).
MAX_HZ = 100
# The most points a series keeps in the results: a 10-s run at 20 Hz keeps every sample.
MAX_POINTS = 240
# Columns every timeline has; the rest are a lab's gauges, named POOL.MEASURE ("default.busy").
OWN_COLUMNS = ("t_ms", "cpu_ms", "jvm_threads", "jvm_threads_started")


class TimelineUnavailable(Exception):
    """The server has no timeline (a lab without PoolTimeline, or an older build)."""


class Timeline:
    """Starts the server's sampler, and turns what it kept into the variant's `timeline`."""

    def __init__(self, base_url: str, hz: int = DEFAULT_HZ, timeout: float = 10):
        self.base_url, self.hz, self.timeout = base_url.rstrip("/"), hz, timeout

    def start(self) -> "Timeline":
        answer = http_fetch(f"{self.base_url}/timeline/start?hz={self.hz}", self.timeout, method="POST")
        if answer.status == 404:
            raise TimelineUnavailable(f"{self.base_url} has no /timeline/start (rebuild the lab: scripts/lab build)")
        if not answer.ok:
            raise TimelineUnavailable(f"POST /timeline/start?hz={self.hz}: {answer.describe()}")
        return self

    def finish(self) -> dict:
        """Stops the sampler; the series, shrunk for the results (see `summarise`)."""
        answer = http_fetch(f"{self.base_url}/timeline/stop", self.timeout, method="POST")
        if not answer.ok:
            raise TimelineUnavailable(f"POST /timeline/stop: {answer.describe()}")
        try:
            return summarise(json.loads(answer.body))
        except (ValueError, KeyError, TypeError) as error:
            raise TimelineUnavailable(f"POST /timeline/stop answered no timeline ({error})") from None


def summarise(raw: dict, max_points: int = MAX_POINTS) -> dict:
    """The results' form of a sampler's answer: seconds since the start, the server's CPU as cores
    busy over each sample's interval, the JVM's threads, and each pool's measures, with at most
    `max_points` points a series (neighbouring samples averaged)."""
    series = raw["series"]
    times = [int(t) for t in series["t_ms"]]
    count = len(times)
    for name, values in series.items():
        if len(values) != count:
            raise ValueError(f"column {name} has {len(values)} values for {count} samples")
    # A sample's CPU is the JVM's over the interval that ends at it: the first sample has none.
    cpu = series["cpu_ms"]
    cores = [None] + [
        round((cpu[i] - cpu[i - 1]) / (times[i] - times[i - 1]), 3)
        if cpu[i] >= 0 and cpu[i - 1] >= 0 and times[i] > times[i - 1] else None
        for i in range(1, count)]
    bins = _bins(count, max_points)
    pools: dict[str, dict] = {}
    for name, values in series.items():
        if name in OWN_COLUMNS:
            continue
        pool, _, measure = name.rpartition(".")
        if not pool or not measure:
            raise ValueError(f"gauge {name!r} is not named POOL.MEASURE")
        # The sampler's -1: the gauge could not be read then.
        pools.setdefault(pool, {})[measure] = _shrink([None if v < 0 else v for v in values], bins)
    # Threads started between the first sample and the last (a server built before the sampler
    # counted them has no such column).
    started = series.get("jvm_threads_started")
    return {
        "hz": raw["hz"],
        "samples": count,
        "dropped": raw.get("dropped", 0),
        "t_s": [round(t / 1000, 2) for t in _shrink(times, bins)],
        "cpu_cores": _shrink(cores, bins, digits=2),
        "jvm_threads": _shrink(series["jvm_threads"], bins),
        **({"jvm_threads_started": int(started[-1] - started[0])} if started and count else {}),
        "pools": pools,
    }


def _bins(count: int, max_points: int) -> list[tuple[int, int]]:
    """[start, end) index ranges that split `count` samples into at most `max_points` runs."""
    points = min(count, max_points)
    return [(i * count // points, (i + 1) * count // points) for i in range(points)]


def _shrink(values: list, bins: list[tuple[int, int]], digits: int = 1) -> list:
    """Each bin's mean (None where the bin holds no value); whole numbers stay whole when a bin
    holds one sample."""
    shrunk = []
    for start, end in bins:
        known = [v for v in values[start:end] if v is not None]
        if not known:
            shrunk.append(None)
        elif len(known) == 1 and isinstance(known[0], int):
            shrunk.append(known[0])
        else:
            shrunk.append(round(sum(known) / len(known), digits))
    return shrunk


def share_at(values: list, level: float) -> float | None:
    """The share of a series' points at or above `level` (None for an empty series)."""
    known = [v for v in values if v is not None]
    return round(sum(v >= level for v in known) / len(known), 3) if known else None
