"""Lab 03: JDBC on Play's default dispatcher, on a dedicated pool, and with pools too big.

Every variant is a server configuration of its own (connection pool size, database.dispatcher
size), so the driver starts one server per set-up. The database is real: DATABASE_URL if set,
else a throwaway PostgreSQL cluster (pul.postgres) pinned to the load generator's core, so
that the Play server keeps its core to itself and PostgreSQL's CPU is a limit of its own.

`--sweep` runs the database-dispatcher set-up at one concurrency for several pool sizes
(steps `pool=N`) and draws throughput and p99 against pool size, with the Little's-law line
min(c, pool) / query time and the ceiling PostgreSQL's CPU puts on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import threading
import time
from typing import Iterator

from .. import postgres, report
from ..errors import ServerFailed, UsageError
from ..lab import Lab, Prediction, Step
from ..probe import tree_cpu_seconds
from ..results import _fmt, machine_line, markdown_table

VARIANTS = ("default-dispatcher", "database-dispatcher", "oversized-dispatcher", "oversized-connections")
# Seconds a sweep step should last, at its Little's-law rate (bounded by --requests).
SWEEP_SECONDS = 8
MIN_SWEEP_REQUESTS = 200
# A sweep step may run up to this many times --requests: on the plateau, a step of --requests
# lasts only a few seconds, and its ramp-up and drain would weigh on the result.
SWEEP_REQUESTS_FACTOR = 2
# Name prefix of the sweep's extra step whose waits are all exactly --query-ms.
LOCKSTEP = "lockstep-pool="
# ... and of the step whose waits differ twice as much as the sweep's (±100% instead of ±50%).
WIDE_JITTER = "wide-jitter-pool="
# The sweep's extra steps: one pool size once more, with only the waits' jitter changed.
# (name prefix, the option giving the pool size, lab.query-jitter)
JITTER_STEPS = ((LOCKSTEP, "lockstep_pool", 0.0),  # identical waits: the connections fall into lockstep
                (WIDE_JITTER, "wide_jitter_pool", 1.0))  # waits spread twice as wide: they bunch up less
# Queries /calibrate times (after its warm-up): about a second of PostgreSQL's CPU, read from /proc
# in 10 ms ticks, so the CPU per query is known to about 1%.
CALIBRATION_RUNS = 300


def parse_pools(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--pools takes a comma-separated list of pool sizes, e.g. 2,4,8 (got {text!r})")
    if not sizes or any(n < 1 or n > 90 for n in sizes):
        raise UsageError(f"--pools: every pool size must be between 1 and 90 "
                         f"(the throwaway cluster allows 100 connections; got {text!r})")
    return tuple(sorted(set(sizes)))


def mean_value_analysis(connections: int, busy_ms: float, cpu_ms: float, cores: int = 1) -> float:
    """Requests/s of `connections` that each hold a connection for `busy_ms`, of which `cpu_ms` on
    PostgreSQL's CPU (`cores` of them, shared), the rest waiting (pg_sleep, network).

    Exact mean-value analysis of that closed queueing network, one connection at a time: Little's
    law gives the queue each new connection finds at the CPU, and the time it then spends there.
    Several cores: Seidmann's approximation (one core 1/cores as fast, plus the rest as a delay)."""
    demand = cpu_ms / cores
    delay = max(busy_ms - cpu_ms, 0.0) + cpu_ms * (cores - 1) / cores
    queue = 0.0
    throughput = 0.0
    for n in range(1, connections + 1):
        at_cpu = demand * (1 + queue)          # the queue an arriving query finds, then its own work
        throughput = n / (delay + at_cpu)      # Little's law for the whole loop
        queue = throughput * at_cpu            # Little's law at the CPU
    return throughput * 1000.0


def postgres_cpu_seconds(postmaster: int) -> float:
    """CPU time of the postmaster and its children (every backend is a child of it).

    PostgreSQL puts each backend in a session of its own, so the process group does not
    find them; their parent does. The pool keeps its connections open, so the backends
    that serve the load live through a whole measurement."""
    return tree_cpu_seconds(postmaster)


class CpuMeter(threading.Thread):
    """Samples PostgreSQL's CPU time 5 times a second, to read it over any past window."""

    def __init__(self, postmaster: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.postmaster = postmaster
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            with contextlib.suppress(OSError):
                self.samples.append((time.monotonic(), postgres_cpu_seconds(self.postmaster)))
            self._stop_event.wait(self.interval)

    def between(self, start: float, end: float) -> float | None:
        """CPU seconds used between two monotonic times (nearest samples)."""
        samples = list(self.samples)
        if len(samples) < 2:
            return None
        first = min(samples, key=lambda s: abs(s[0] - start))
        last = min(samples, key=lambda s: abs(s[0] - end))
        return last[1] - first[1] if last[0] > first[0] else None

    def stop(self) -> None:
        self._stop_event.set()
        self.join(2)


class JdbcDispatcher(Lab):
    # --query-ms 0: no wait, the query alone; --lockstep-pool 0 / --wide-jitter-pool 0: no such step.
    ZERO_ALLOWED = ("query_ms", *(key for _, key, _ in JITTER_STEPS))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._postgres_cpus: str | None = None
        self._meter: CpuMeter | None = None
        self._postgres_cores = 1
        # The database of the run in progress (services() sets it).
        self._database: postgres.Database | None = None

    # -- command line -----------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        d = self.defaults
        parser.add_argument("--query-ms", type=int, default=d["query_ms"], metavar="N",
                            help=f"PostgreSQL-side wait per query (pg_sleep), in ms (default {d['query_ms']})")
        parser.add_argument("--connection-timeout-ms", type=int, default=d["connection_timeout_ms"], metavar="N",
                            help="how long a request may wait for a connection before it fails with a 503 "
                                 f"(HikariCP connectionTimeout, at least 250; default {d['connection_timeout_ms']})")
        parser.add_argument("--oversized", type=int, default=d["oversized"], metavar="N",
                            help="threads (oversized-dispatcher) and connections + threads "
                                 f"(oversized-connections) of the oversized set-ups (default {d['oversized']})")
        sweep = parser.add_mutually_exclusive_group()
        sweep.add_argument("--sweep", dest="sweep", action="store_const", const="only", default=d["sweep"],
                           help="run only the sweep: database-dispatcher once per --pools size (steps pool=N)")
        sweep.add_argument("--no-sweep", dest="sweep", action="store_const", const="none",
                           help="run only the four variants, not the sweep")
        parser.add_argument("--pools", default=d["pools"], metavar="N,N",
                            help=f"pool sizes for --sweep (default {d['pools']})")
        parser.add_argument("--lockstep-pool", type=int, default=d["lockstep_pool"], metavar="N",
                            help="after the sweep, this pool size once more with every wait exactly --query-ms "
                                 f"(step lockstep-pool=N; 0: skip it; default {d['lockstep_pool']})")
        parser.add_argument("--wide-jitter-pool", type=int, default=d["wide_jitter_pool"], metavar="N",
                            help="after the sweep, this pool size once more with waits varied by ±100%% instead "
                                 f"of ±50%% (step wide-jitter-pool=N; 0: skip it; default {d['wide_jitter_pool']})")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        parse_pools(params["pools"])
        if params["connection_timeout_ms"] < 250:
            raise UsageError("--connection-timeout-ms must be at least 250 (HikariCP's minimum)")
        if params["query_ms"] < 0:
            raise UsageError("--query-ms must be 0 or more")
        for _, key, _ in JITTER_STEPS:
            if not 0 <= params[key] <= 90:
                raise UsageError(f"--{key.replace('_', '-')} must be between 0 (skip) and 90")
        for key in ("pool_size", "oversized"):
            if params[key] > 90:
                raise UsageError(f"--{key.replace('_', '-')} must be at most 90 "
                                 "(the throwaway cluster allows 100 connections)")
        # Where PostgreSQL runs: on the load generator's core, so the server keeps its own.
        if getattr(options, "no_pin", False) or (os.cpu_count() or 1) < 2:
            self._postgres_cpus = None
        else:
            self._postgres_cpus = getattr(options, "load_cpus", None) or "1"
        from_url = bool(os.environ.get("DATABASE_URL", "").strip())
        if getattr(options, "target", None):
            # `--target`: the server and its database are on the other machine (scripts/lab serve 03
            # started them); their CPU cannot be read from here, so only Little's law is predicted.
            params["database"] = "the target's"
            params["postgres_cpus"] = None
            return params
        params["database"] = "DATABASE_URL" if from_url else "throwaway"
        params["postgres_cpus"] = None if from_url else self._postgres_cpus
        return params

    # -- what to run ------------------------------------------------------
    def server_properties(self, params: dict) -> dict[str, str]:
        return {"lab.query-ms": str(params["query_ms"]),
                "lab.connection-timeout-ms": str(params["connection_timeout_ms"])}

    @staticmethod
    def _props(connections: int, dispatcher: int) -> dict[str, str]:
        return {"lab.pool-size": str(connections), "lab.dispatcher-size": str(dispatcher)}

    def steps(self, params: dict) -> list[Step]:
        steps = [] if params["sweep"] == "only" else self._variant_steps(params)
        if params["sweep"] != "none":
            steps += self._sweep_steps(params)
        return steps

    def _sweep_steps(self, params: dict) -> list[Step]:
        steps = [self._sweep_step(params, f"pool={size}", size) for size in parse_pools(params["pools"])]
        for prefix, key, jitter in JITTER_STEPS:
            if size := params[key]:
                steps.append(self._sweep_step(params, f"{prefix}{size}", size, {"lab.query-jitter": f"{jitter:g}"},
                                              {"query_jitter": jitter}))
        return steps

    def _sweep_step(self, params: dict, name: str, size: int, props: dict | None = None,
                    extra: dict | None = None) -> Step:
        """database-dispatcher with `size` connections and threads, at the run's concurrency."""
        c, n = params["concurrency"], params["requests"]
        # Aim at a few seconds per step: small pools serve few requests a second.
        rate = min(c, size) * 1000.0 / max(params["query_ms"], 1)
        return Step(name=name, bench_variant="database-dispatcher", concurrency=c,
                    requests=min(SWEEP_REQUESTS_FACTOR * n, max(MIN_SWEEP_REQUESTS, int(rate * SWEEP_SECONDS))),
                    server_props={**self._props(size, size), **(props or {})}, pool="database",
                    keep_alive=True, warmup_requests=max(100, int(rate * 3)),
                    extra={"pool_size": size, "dispatcher_size": size, **(extra or {})})

    def _variant_steps(self, params: dict) -> list[Step]:
        c, n = params["concurrency"], params["requests"]
        pool, big = params["pool_size"], params["oversized"]
        set_ups = {
            # JDBC on Play's default dispatcher; the connection pool as configured.
            "default-dispatcher": (pool, pool, "default"),
            # Play's recommendation: database.dispatcher as big as the connection pool.
            "database-dispatcher": (pool, pool, "database"),
            # More threads than connections: the extra threads wait inside HikariCP.
            "oversized-dispatcher": (pool, big, "database"),
            # More connections (and threads) than PostgreSQL has cores to serve.
            "oversized-connections": (big, big, "database"),
        }
        return [Step(name=name, bench_variant=name, concurrency=c, requests=n,
                     server_props=self._props(connections, threads), pool=dispatcher, probe="/status",
                     keep_alive=True,
                     extra={"pool_size": connections, "dispatcher_size": threads})
                for name, (connections, threads, dispatcher) in set_ups.items()]

    @contextlib.contextmanager
    def services(self, context) -> Iterator[dict[str, str]]:
        """PostgreSQL first: DATABASE_URL's, or a throwaway cluster on the load generator's core."""
        with postgres.database(context.children, context.progress, self._postgres_cpus) as db:
            # The server inherits the driver's environment: the password stays off its command line.
            saved = {key: os.environ.get(key) for key in db.env()}
            os.environ.update(db.env())
            self._postgres_cores = len(_cpu_list(db.cpus)) if db.cpus else (os.cpu_count() or 1)
            self._database = db
            if db.pgid:
                self._meter = CpuMeter(db.pgid)
                self._meter.start()
            try:
                yield {}
            finally:
                if self._meter:
                    self._meter.stop()
                    self._meter = None
                self._database = None
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value

    def inspect_server(self, server) -> dict:
        """/pools, plus what one query costs: its wall time alone (the app's /calibrate) and, when
        the driver runs PostgreSQL itself, the CPU PostgreSQL spent per query meanwhile."""
        pools = server.pools()
        postmaster = self._database.pgid if self._database else None
        before = postgres_cpu_seconds(postmaster) if postmaster else None
        body = server.get(f"/calibrate?runs={CALIBRATION_RUNS}", timeout=60)
        if not body:
            raise ServerFailed("the server did not answer /calibrate (timing the query alone); "
                           "see its log above")
        calibration = json.loads(body)
        if before is not None:
            used = postgres_cpu_seconds(postmaster) - before
            queries = calibration["runs"] + calibration["warmup_runs"]
            calibration["postgres_cpu_ms"] = round(used * 1000 / queries, 3)
        pools["calibration"] = calibration
        return pools

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Two bounds, as in every lab: Little's law for the pool, min(c, threads, connections) /
        (time a query holds its connection), and PostgreSQL's CPU, cores / (CPU per query).
        The prediction is the lower of the two; mean-value analysis (Little's law applied to the
        queue at PostgreSQL's CPU) adds the curve between them."""
        threads = pools["pools"][step.pool]["threads"]
        connections = pools["pools"]["connections"]["threads"]
        calibration = pools["calibration"]
        alone_ms = float(calibration["median_ms"])
        busy_ms = float(pools["query_ms"]) + alone_ms
        in_service = min(step.concurrency, threads, connections)
        littles_law = in_service / (busy_ms / 1000.0)
        step.service_ms = round(busy_ms, 3)
        step.extra.update({"query_alone_ms": alone_ms, "littles_law_requests_per_sec": round(littles_law, 1)})
        why = (f"min({step.concurrency} in flight, {threads} {step.pool}-dispatcher threads, "
               f"{connections} connections) / ({pools['query_ms']} ms wait + {alone_ms:g} ms query)")
        cpu_ms = calibration.get("postgres_cpu_ms")
        if params.get("postgres_cpus") is None or not cpu_ms:
            return Prediction(round(littles_law, 1), why)
        cores = self._postgres_cores
        ceiling = cores / (cpu_ms / 1000.0)
        step.extra.update({
            "postgres_cpu_ms_per_query": cpu_ms,
            "postgres_cores": cores,
            "postgres_ceiling_requests_per_sec": round(ceiling, 1),
            "queueing_requests_per_sec": round(mean_value_analysis(in_service, busy_ms, cpu_ms, cores), 1),
        })
        if ceiling < littles_law:
            return Prediction(round(ceiling, 1), f"PostgreSQL's CPU: {cores} core(s) / "
                                                 f"{cpu_ms:g} ms of CPU per query (Little's law alone: "
                                                 f"{littles_law:,.0f})")
        return Prediction(round(littles_law, 1), why)

    def verify_step(self, step: Step, server, record: dict) -> None:
        """Record PostgreSQL's CPU during the measured run and the server's connection-timeout count."""
        body = server.get("/pools")
        if body:
            connections = json.loads(body)["pools"]["connections"]
            record["extra"]["connection_timeouts_so_far"] = connections["timeouts"]
        if self._meter and record.get("duration_s"):
            end = time.monotonic()
            used = self._meter.between(end - record["duration_s"], end)
            if used is not None:
                record["extra"]["postgres_cpu_seconds"] = round(used, 2)
                record["extra"]["postgres_cpu_utilization"] = round(used / record["duration_s"], 2)
                if record.get("complete"):
                    record["extra"]["postgres_cpu_ms_per_request"] = round(used * 1000 / record["complete"], 3)

    # -- results ----------------------------------------------------------
    def summary_notes(self, results: dict) -> list[str]:
        notes = []
        pg = (results.get("pools") or {}).get("postgresql")
        if pg:
            settings = ", ".join(f"{k}={v}" for k, v in pg["settings"].items())
            notes.append(f"Database: {pg['version'].split(' on ')[0]} ({settings}); "
                         f"{_where(results['params'])}.")
        for v in results["variants"]:
            if v["failed"] or v["non_2xx"]:
                notes.append(f"{v['name']}: {v['non_2xx']:,} of {v['requests']:,} requests got no connection "
                             f"within {results['params']['connection_timeout_ms']} ms (503), {v['failed']:,} failed.")
        by_name = {v["name"]: v for v in results["variants"]}
        if "default-dispatcher" in by_name and "database-dispatcher" in by_name:
            ratio = by_name["database-dispatcher"]["requests_per_sec"] / by_name["default-dispatcher"]["requests_per_sec"]
            notes.append(f"database.dispatcher gave {ratio:.1f}x the throughput of running the queries "
                         "on the default dispatcher.")
        for v in results["variants"]:
            if v.get("probe") and v["probe"].get("p99_ms") is not None:
                notes.append(f"{v['name']}: /status answered in {v['probe']['p50_ms']:.1f} ms "
                             f"(p99 {v['probe']['p99_ms']:.1f} ms) while the load ran.")
        return notes

    def report(self, results: dict) -> dict[str, str]:
        variants, sweep = split(results)
        artifacts = {}
        if variants["variants"]:
            artifacts["book/src/generated/lab03-table.md"] = (
                markdown_table(variants, TABLE_COLUMNS) + "\n" + machine_line(results) + " "
                + _database_line(results) + "\n")
            artifacts["book/src/generated/lab03-summary.md"] = \
                "\n".join(f"- {note}" for note in self.summary_notes(variants)) + "\n"
        if sweep["variants"]:
            artifacts["book/src/generated/lab03-sweep-table.md"] = (
                markdown_table(sweep, SWEEP_COLUMNS) + "\n" + machine_line(results) + " "
                + _database_line(results) + "\n")
            artifacts["book/src/figures/lab03-sweep.svg"] = sweep_figure(sweep)
            artifacts["book/src/generated/lab03-sweep-summary.md"] = sweep_summary(sweep)
        return artifacts


def is_sweep_step(variant: dict) -> bool:
    """A step of the sweep, the lockstep and wide-jitter steps included."""
    return variant["name"].startswith(("pool=", LOCKSTEP, WIDE_JITTER))


def is_lockstep_step(variant: dict) -> bool:
    return variant["name"].startswith(LOCKSTEP)


def is_wide_jitter_step(variant: dict) -> bool:
    return variant["name"].startswith(WIDE_JITTER)


def split(results: dict) -> tuple[dict, dict]:
    """The results twice: with the four variants only, and with the sweep's steps only."""
    return ({**results, "variants": [v for v in results["variants"] if not is_sweep_step(v)]},
            {**results, "variants": [v for v in results["variants"] if is_sweep_step(v)]})


def _cpu_list(cpus: str) -> set[int]:
    chosen: set[int] = set()
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        chosen.update(range(int(low), int(high or low) + 1))
    return chosen


def _where(params: dict) -> str:
    if params.get("database") == "DATABASE_URL":
        return "the database in DATABASE_URL"
    if params.get("database") == "the target's":
        return "the database of the server under test (--target), on another machine"
    cpus = params.get("postgres_cpus")
    return ("a throwaway cluster " + (f"pinned to CPU {cpus} (beside ab)" if cpus else "(not pinned)"))


def _database_line(results: dict) -> str:
    pg = (results.get("pools") or {}).get("postgresql")
    version = pg["version"].split(" on ")[0] if pg else "PostgreSQL"
    settings = f", max_connections={pg['settings']['max_connections']}" if pg else ""
    return f"Database: {version}{settings}, {_where(results['params'])}."


def _extra(v: dict, key: str, digits: int = 0) -> str:
    return _fmt((v.get("extra") or {}).get(key), digits)


TABLE_COLUMNS = [
    ("variant", lambda v: v["name"], False),
    ("connections", lambda v: _extra(v, "pool_size"), True),
    ("threads", lambda v: _fmt(v["pool_threads"]), True),
    ("req/s", lambda v: _fmt(v["requests_per_sec"], 0), True),
    ("p50 ms", lambda v: _fmt(v["p50_ms"], 1), True),
    ("p99 ms", lambda v: _fmt(v["p99_ms"], 1), True),
    ("failed", lambda v: _fmt(v["failed"]), True),
    ("non-2xx (timeouts)", lambda v: _fmt(v["non_2xx"]), True),
    ("/status p99 ms", lambda v: _fmt((v.get("probe") or {}).get("p99_ms"), 1), True),
    ("Play CPU", lambda v: f"{v['server_cpu_utilization']:.0%}" if v.get("server_cpu_utilization") is not None else "–", True),
    ("PostgreSQL CPU", lambda v: f"{v['extra']['postgres_cpu_utilization']:.0%}"
     if (v.get("extra") or {}).get("postgres_cpu_utilization") is not None else "–", True),
    ("its core, all users", lambda v: f"{v['load_cores_busy']:.0%}" if v.get("load_cores_busy") is not None else "–", True),
    ("predicted req/s", lambda v: _fmt(v["predicted_requests_per_sec"], 0), True),
    ("measured/predicted", lambda v: _fmt(v.get("measured_over_predicted"), 2), True),
]

SWEEP_COLUMNS = [c for c in TABLE_COLUMNS if c[0] not in ("threads", "/status p99 ms")]
SWEEP_COLUMNS[1] = ("pool (connections = threads)", lambda v: _extra(v, "pool_size"), True)
SWEEP_COLUMNS.insert(-1, ("with queueing req/s", lambda v: _extra(v, "queueing_requests_per_sec"), True))


def _sweep_model(results: dict) -> dict:
    """The sweep's prediction inputs, the median over its servers' calibrations."""
    variants = sorted((v for v in results["variants"] if v["name"].startswith("pool=")),
                      key=lambda v: v["extra"]["pool_size"])
    extra = [v["extra"] for v in variants]
    model = {"variants": variants, "c": results["params"]["concurrency"],
             "lockstep": [v for v in results["variants"] if is_lockstep_step(v)],
             "wide_jitter": [v for v in results["variants"] if is_wide_jitter_step(v)],
             "busy_ms": statistics.median(v["service_ms"] for v in variants),
             "alone_ms": statistics.median(e["query_alone_ms"] for e in extra),
             "jitter": (results.get("pools") or {}).get("query_jitter")}
    if all(e.get("postgres_cpu_ms_per_query") for e in extra):
        model["cpu_ms"] = statistics.median(e["postgres_cpu_ms_per_query"] for e in extra)
        model["cores"] = extra[0]["postgres_cores"]
        model["ceiling"] = model["cores"] * 1000.0 / model["cpu_ms"]
    return model


def _calibration_spread(variants: list[dict], cores: int) -> str:
    """How far the servers' calibrations differ, and whether the work's wall time moved with its CPU:
    if both move together, the machine ran faster or slower, not PostgreSQL doing other work."""
    cpu = [v["extra"]["postgres_cpu_ms_per_query"] for v in variants]
    wall = [v["extra"]["query_alone_ms"] for v in variants]
    text = (f"- The {len(cpu)} servers' calibrations ranged from {min(cpu):.2f} to {max(cpu):.2f} ms of CPU per "
            f"request (a limit from {cores * 1000 / max(cpu):,.0f} to {cores * 1000 / min(cpu):,.0f} queries a "
            "second), hence the median.")
    if len(cpu) < 3 or len(set(cpu)) < 2 or len(set(wall)) < 2:
        return text
    r = statistics.correlation(cpu, wall)
    if r >= 0.7:
        return text + (f" The wall time of that work moved with its CPU (correlation {r:.2f}): the same query "
                       "on the same data needed more or less CPU time from one server to the next, which points "
                       "at the machine's speed (on a shared virtual machine, its neighbours) rather than at "
                       "PostgreSQL.")
    return text + f" The wall time of the same work did not follow its CPU closely (correlation {r:.2f})."


def sweep_summary(results: dict) -> str:
    """The sweep's prediction (from the measured query cost) and what was measured, in sentences."""
    m = _sweep_model(results)
    variants, c, busy = m["variants"], m["c"], m["busy_ms"]
    wait = f"{results['params']['query_ms']} ms of waiting (pg_sleep"
    wait += f", varied by ±{m['jitter']:.0%})" if m.get("jitter") else ")"
    lines = [f"- Each query held its connection for about {busy:.1f} ms: {wait} and {m['alone_ms']:.2f} ms for "
             "the rest of its database work: a connection from the pool, the two statements, the answer (the "
             "median wall time of that work with no wait, run alone by each server at start-up; the median "
             "over the servers)."]
    if "ceiling" in m:
        knee = m["ceiling"] * busy / 1000.0
        lines.append(f"- While that work was timed alone, PostgreSQL spent {m['cpu_ms']:.2f} ms of CPU per request, so "
                     f"{m['cores']} core(s) can execute at most about {m['ceiling']:,.0f} queries a second. "
                     f"Little's law meets that limit at a pool of about {knee:.0f} connections "
                     f"({m['ceiling']:,.0f}/s x {busy:.1f} ms): below it the pool is the bottleneck, above it "
                     "PostgreSQL's CPU is.")
        lines.append(_calibration_spread(m["variants"], m["cores"]))
    best = max(variants, key=lambda v: v["requests_per_sec"])
    lines.append(f"- Measured at {c} requests in flight: from {variants[0]['requests_per_sec']:,.0f} requests/s "
                 f"with {variants[0]['extra']['pool_size']} connections to at most "
                 f"{best['requests_per_sec']:,.0f} requests/s (with {best['extra']['pool_size']}); "
                 f"{variants[-1]['extra']['pool_size']} connections gave {variants[-1]['requests_per_sec']:,.0f} "
                 f"requests/s with a p99 of {variants[-1]['p99_ms']:,.0f} ms.")
    if "ceiling" in m:
        plateau = [v for v in variants if v["extra"]["littles_law_requests_per_sec"] > m["ceiling"]]
        if plateau:
            lines.append("- Where the prediction is PostgreSQL's CPU limit, the measurements reached "
                         + ", ".join(f"{v['requests_per_sec'] / m['ceiling']:.0%} of it at pool={v['extra']['pool_size']}"
                                     for v in plateau) + ".")
            shared = [v for v in plateau if v.get("load_cores_busy") is not None
                      and v["extra"].get("postgres_cpu_utilization") is not None]
            if shared:
                lines.append("- There, the core PostgreSQL shares with ab was busy "
                             + ", ".join(f"{v['load_cores_busy']:.0%} of the time at pool={v['extra']['pool_size']} "
                                         f"(PostgreSQL itself {v['extra']['postgres_cpu_utilization']:.0%})"
                                         for v in shared)
                             + ": PostgreSQL's share divided by its CPU per request gives the plateau, and the "
                               "difference to 100% is what the plateau misses of the limit.")
    cpu = [(v["extra"]["pool_size"], v["extra"].get("postgres_cpu_utilization")) for v in variants]
    if all(u is not None for _, u in cpu):
        lines.append("- PostgreSQL's CPU use (one core = 100%): "
                     + ", ".join(f"{u:.0%} at pool={n}" for n, u in cpu) + ".")
    by_size = {v["extra"]["pool_size"]: v for v in variants}
    for lock in m["lockstep"]:
        size = lock["extra"]["pool_size"]
        line = (f"- With every wait exactly {results['params']['query_ms']} ms (step {lock['name']}), "
                f"{size} connections served {lock['requests_per_sec']:,.0f} requests/s")
        if size in by_size:
            varied = by_size[size]
            line += (f", against {varied['requests_per_sec']:,.0f} with varied waits: "
                     f"{lock['requests_per_sec'] / varied['requests_per_sec']:.0%} of it")
        pg = lock["extra"].get("postgres_cpu_utilization")
        lines.append(line + (f", while PostgreSQL's core was {pg:.0%} busy." if pg is not None else "."))
    for wide in m["wide_jitter"]:
        lines.append(_wide_jitter_line(wide, by_size.get(wide["extra"]["pool_size"]), m.get("jitter")))
    return "\n".join(lines) + "\n"


def _wide_jitter_line(wide: dict, varied: dict | None, jitter: float | None) -> str:
    """The wide-jitter step against the sweep's step of the same size: did PostgreSQL's core idle less?"""
    size = wide["extra"]["pool_size"]
    line = (f"- With waits varied by ±{wide['extra']['query_jitter']:.0%} (step {wide['name']}), {size} connections "
            f"served {wide['requests_per_sec']:,.0f} requests/s")
    pg_wide = wide["extra"].get("postgres_cpu_utilization")
    if varied is None:
        return line + (f", while PostgreSQL's core was {pg_wide:.0%} busy." if pg_wide is not None else ".")
    line += (f", against {varied['requests_per_sec']:,.0f} with ±{jitter or 0:.0%} "
             f"({wide['requests_per_sec'] / varied['requests_per_sec']:.0%} of it)")
    pg_varied = varied["extra"].get("postgres_cpu_utilization")
    if pg_wide is None or pg_varied is None:
        return line + "."
    line += f"; PostgreSQL's core was {pg_wide:.0%} busy, against {pg_varied:.0%}"
    if pg_wide - pg_varied >= 0.03:
        return line + (": with waits that differ more, fewer queries reach the core together, and it idles less "
                       "(see *Why*).")
    return line + ": no clear difference in this run."


def sweep_figure(results: dict) -> str:
    """Throughput (top) and latency (bottom) against pool size, with the predictions."""
    m = _sweep_model(results)
    variants, c, busy = m["variants"], m["c"], m["busy_ms"]
    rows = "\n".join(f'{v["extra"]["pool_size"]} {v["requests_per_sec"]:.1f} {v["mean_ms"]:.1f} {v["p99_ms"]:.1f}'
                     for v in variants)
    sizes = [v["extra"]["pool_size"] for v in variants]
    low, high = min(sizes) / 1.3, max(sizes) * 1.3
    def point_rows(steps: list[dict]) -> str:
        return "\n".join(f'{v["extra"]["pool_size"]} {v["requests_per_sec"]:.1f}' for v in steps)

    # The extra steps, as single points beside the sweep's line.
    extra_points = (', $lockstep using 1:2 with points pointtype 2 pointsize 2 linewidth 2 linecolor rgb "#d62728" '
                    f'title "measured, every wait exactly {results["params"]["query_ms"]} ms"') if m["lockstep"] else ""
    if m["wide_jitter"]:
        spread = m["wide_jitter"][0]["extra"]["query_jitter"]
        extra_points += (', $wide using 1:2 with points pointtype 9 pointsize 1.8 linecolor rgb "#9467bd" '
                         f'title "measured, waits varied by ±{spread:.0%}"')
    measured_title = f"measured, waits varied by ±{m['jitter']:.0%}" if m.get("jitter") else "measured"
    ceiling = m.get("ceiling")
    # The queueing curve, and Little's law for the latency it implies (c requests in flight).
    curve = ""
    if ceiling:
        points = sorted({max(1, round(low * (high / low) ** (i / 120))) for i in range(121)})
        curve = "\n".join(f"{n} {x:.2f} {c * 1000.0 / x:.2f}" for n in points
                          for x in [mean_value_analysis(min(n, c), busy, m["cpu_ms"], m["cores"])])
    top = max([v["requests_per_sec"] for v in variants] + ([ceiling] if ceiling else [])) * 2.0
    extra_plots = (f', ceiling(x) with lines dashtype 2 linewidth 2 linecolor rgb "#d62728" '
                   f'title "PostgreSQL CPU limit: {m["cores"]} core / {m["cpu_ms"]:.2f} ms per query", '
                   f'$queueing using 1:2 with lines linewidth 2 dashtype 3 linecolor rgb "#2ca02c" '
                   f'title "with queueing at the CPU (mean-value analysis)"') if ceiling else ""
    latency_model = (', $queueing using 1:3 with lines linewidth 2 dashtype 3 linecolor rgb "#2ca02c" '
                     f'title "Little\'s law: {c} / predicted throughput"') if ceiling else ""
    script = report.svg_header(760, 660) + f"""
set multiplot layout 2,1 title "Lab 03 sweep: {c} requests in flight, {results['params']['query_ms']} ms of database wait per query"
set logscale x 2
set xrange [{low:.2f}:{high:.2f}]
set xtics ({", ".join(str(s) for s in sizes)})
set grid
set samples 400
set key top left Left reverse
set ylabel "requests per second"
set yrange [0:{top:.0f}]
littles(x) = (x < {c} ? x : {c}) * 1000.0 / {busy:.3f}
ceiling(x) = {ceiling or 0:.1f}
$data << EOD
{rows}
EOD
$queueing << EOD
{curve}
EOD
$lockstep << EOD
{point_rows(m["lockstep"])}
EOD
$wide << EOD
{point_rows(m["wide_jitter"])}
EOD
plot littles(x) with lines linewidth 2 linecolor rgb "#999999" title "Little's law: min({c}, pool) / {busy:.1f} ms"{extra_plots}, \\
     $data using 1:2 with linespoints pointtype 7 pointsize 1.2 linewidth 2 linecolor rgb "#1f77b4" title "{measured_title}"{extra_points}
set xlabel "pool size (connections = database.dispatcher threads)"
set ylabel "latency (ms)"
set yrange [0:*]
set key top right
plot $data using 1:3 with linespoints pointtype 7 pointsize 1.2 linewidth 2 linecolor rgb "#1f77b4" title "measured mean", \\
     $data using 1:4 with linespoints pointtype 5 pointsize 1.0 linewidth 2 linecolor rgb "#ff7f0e" title "measured p99"{latency_model}
unset multiplot
"""
    return report.gnuplot_svg(script)


LAB = JdbcDispatcher(
    number="03",
    title="Sizing dispatchers for JDBC",
    summary="A real PostgreSQL query on the default dispatcher, on database.dispatcher, and with pools too big; "
            "then a sweep over pool sizes.",
    defaults={"concurrency": 64, "requests": 1500, "pool_size": 20, "query_ms": 80,
              "connection_timeout_ms": 250, "oversized": 64, "sweep": "also", "pools": "2,4,8,16,32,48,64",
              "lockstep_pool": 32, "wide_jitter_pool": 64},
)
