"""Lab 03: JDBC on Play's default dispatcher, on a dedicated pool, and with pools too big.

The database is real: DATABASE_URL if set, else a throwaway PostgreSQL cluster (pul.postgres)
pinned to the load generator's core, so that the Play server keeps its core to itself and
PostgreSQL's CPU is a limit of its own.

`--sweep` runs the database-dispatcher set-up at one concurrency for several pool sizes
(steps `pool=N`) and draws throughput and p99 against pool size, with the Little's-law line
min(c, pool) / query time and the ceiling PostgreSQL's CPU puts on it.

Two modes. `--thorough` (the book's committed runs) starts a server per set-up: HikariCP's pool
and database.dispatcher get their sizes at start-up. The default mode fits a workshop (about two
minutes): two servers, each with copies of database.dispatcher at every size it needs
(lab.dispatcher-sizes, app/database/SizedDispatchers.java), chosen per request
(/sales/sized?threads=N&jitter=J), and shorter steps. One server has --pool-size connections
(the first three variants); the other as many as the largest size it serves (oversized-connections
and the sweep), of which a step uses at most its dispatcher's threads: each thread holds one
connection at a time, so the threads bound the queries in flight and the other connections
stay idle. The connection pool is not resized at runtime: HikariCP's HikariConfigMXBean can set
maximumPoolSize, but a fixed pool (minimumIdle = maximumPoolSize) never closes the connections
above a smaller size (HikariPool.HouseKeeper retires idle ones only while minimumIdle <
maximumPoolSize), and ConcurrentBag.borrow hands out any idle one, so shrinking would mean
evicting every connection and opening new backends during the measurement (HikariCP 5.0.1).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import threading
import time
from typing import Iterator

from pul import model, postgres
from pul.checks import parse_cpu_list
from pul.errors import ServerFailed, UsageError
from pul.lab import Lab, Prediction, Services, Step
from pul.probe import tree_cpu_seconds

MODES = ("default", "thorough")
VARIANTS = ("default-dispatcher", "database-dispatcher", "oversized-dispatcher", "oversized-connections")
# --thorough: a sweep step lasts --step-seconds (8 unless given) at its Little's-law rate,
# bounded by --requests.
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
# --thorough, when the option itself is not given: the full sweep and the step lengths of the
# book's committed runs. The default mode takes lab.toml's values.
THOROUGH_DEFAULTS = {"pools": "2,4,8,16,32,48,64", "requests": 1500, "step_seconds": 8}
# Default mode: every step lasts --step-seconds at its Little's-law rate (bounded by --requests);
# a warm-up round this long. The server's JIT is warm after its first steps' rounds.
WARMUP_SECONDS = 1.5
MIN_STEP_REQUESTS = 150
DEFAULT_WARMUP_MAX_ROUNDS = 2
# The endpoint (bench.sh) that picks a sized dispatcher per request: THREADS=N, JITTER=J.
SIZED = "sized"
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
        parser.add_argument("--pools", default=None, metavar="N,N",
                            help=f"pool sizes for --sweep (default {d['pools']}; "
                                 f"with --thorough {THOROUGH_DEFAULTS['pools']})")
        parser.add_argument("--thorough", dest="mode", action="store_const", const="thorough",
                            default=d["mode"],
                            help="the book's full run: a server per set-up, longer steps, "
                                 f"--pools {THOROUGH_DEFAULTS['pools']} and --requests "
                                 f"{THOROUGH_DEFAULTS['requests']} unless given (about 6 minutes)")
        parser.add_argument("--step-seconds", type=int, default=None, metavar="N",
                            help="how long a step should last at its Little's-law rate, within --requests "
                                 f"(default {d['step_seconds']}; with --thorough {THOROUGH_DEFAULTS['step_seconds']}, "
                                 "and only for the sweep: its four variants run --requests each)")
        # --requests: None until params() knows the mode.
        parser.set_defaults(requests=None)
        parser.add_argument("--lockstep-pool", type=int, default=d["lockstep_pool"], metavar="N",
                            help="after the sweep, this pool size once more with every wait exactly --query-ms "
                                 f"(step lockstep-pool=N; 0: skip it; default {d['lockstep_pool']})")
        parser.add_argument("--wide-jitter-pool", type=int, default=d["wide_jitter_pool"], metavar="N",
                            help="after the sweep, this pool size once more with waits varied by ±100%% instead "
                                 f"of ±50%% (step wide-jitter-pool=N; 0: skip it; default {d['wide_jitter_pool']})")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        if params.get("mode") not in MODES:
            raise UsageError(f"mode must be one of {', '.join(MODES)} (got {params.get('mode')!r})")
        for key, value in THOROUGH_DEFAULTS.items():
            if params.get(key) is None:
                params[key] = value if params["mode"] == "thorough" else self.defaults[key]
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
            postgres_cpus = None
        else:
            postgres_cpus = getattr(options, "load_cpus", None) or "1"
        from_url = bool(os.environ.get("DATABASE_URL", "").strip())
        if getattr(options, "target", None):
            # `--target`: the server and its database are on the other machine (scripts/lab serve 03
            # started them); their CPU cannot be read from here, so only Little's law is predicted.
            params["database"] = "the target's"
            params["postgres_cpus"] = None
            return params
        params["database"] = "DATABASE_URL" if from_url else "throwaway"
        params["postgres_cpus"] = None if from_url else postgres_cpus
        return params

    # -- what to run ------------------------------------------------------
    def server_properties(self, params: dict) -> dict[str, str]:
        return {"lab.query-ms": str(params["query_ms"]),
                "lab.connection-timeout-ms": str(params["connection_timeout_ms"])}

    @staticmethod
    def _props(connections: int, dispatcher: int) -> dict[str, str]:
        return {"lab.pool-size": str(connections), "lab.dispatcher-size": str(dispatcher)}

    def steps(self, params: dict) -> list[Step]:
        if params.get("mode", "default") != "thorough":
            return self._shared_steps(params)
        steps = [] if params["sweep"] == "only" else self._variant_steps(params)
        if params["sweep"] != "none":
            steps += self._sweep_steps(params)
        return steps

    # -- the default mode: two servers, a dispatcher per size -------------
    def _shared_steps(self, params: dict) -> list[Step]:
        """The same variants and sweep as --thorough, on two servers: one with --pool-size
        connections (default-, database- and oversized-dispatcher), one with as many as the
        largest size it serves (oversized-connections and the sweep)."""
        c, pool, big = params["concurrency"], params["pool_size"], params["oversized"]
        variants, sweep = params["sweep"] != "only", params["sweep"] != "none"
        steps = []
        if variants:
            setup = {**self._props(pool, pool), "lab.dispatcher-sizes": str(big)}
            for name, threads, dispatcher in (("default-dispatcher", None, "default"),
                                              ("database-dispatcher", pool, "database"),
                                              ("oversized-dispatcher", big, f"database-{big}")):
                steps.append(self._shared_step(params, name, setup, dispatcher, threads or 8, pool,
                                               sized=name == "oversized-dispatcher", probe="/status"))
        sizes = parse_pools(params["pools"]) if sweep else ()
        jitter_steps = [(prefix, params[key], jitter) for prefix, key, jitter in JITTER_STEPS
                        if sweep and params[key]]
        threads = sorted({*sizes, *(size for _, size, _ in jitter_steps)})
        connections = max([*threads, *([big] if variants else [])])
        setup = {**self._props(connections, big if variants else connections),
                 "lab.dispatcher-sizes": ",".join(map(str, threads))}
        if variants:
            steps.append(self._shared_step(params, "oversized-connections", setup, "database", big,
                                           connections, probe="/status"))
        for size in sizes:
            steps.append(self._shared_step(params, f"pool={size}", setup, f"database-{size}", size,
                                           connections, sized=True))
        for prefix, size, jitter in jitter_steps:
            steps.append(self._shared_step(params, f"{prefix}{size}", setup, f"database-{size}", size,
                                           connections, sized=True, jitter=jitter))
        return steps

    def _shared_step(self, params: dict, name: str, setup: dict, dispatcher: str, threads: int,
                     connections: int, sized: bool = False, probe: str | None = None,
                     jitter: float | None = None) -> Step:
        """A step of the default mode: about --step-seconds long at its Little's-law rate."""
        c = params["concurrency"]
        rate = min(c, threads, connections) * 1000.0 / max(params["query_ms"], 1)
        extra = {"pool_size": min(threads, connections) if sized else connections,
                 "dispatcher_size": threads, "connections": connections, "server": "shared"}
        if jitter is not None:
            extra["query_jitter"] = jitter
        if sized:
            extra["bench_env"] = {"THREADS": str(threads), **({"JITTER": f"{jitter:g}"} if jitter is not None else {})}
        requests = min(params["requests"], max(MIN_STEP_REQUESTS, int(rate * params["step_seconds"])))
        return Step(name=name, endpoint=SIZED if sized else name, concurrency=c, requests=requests,
                    setup=setup, pool=dispatcher, probe=probe, keep_alive=True,
                    # A round of WARMUP_SECONDS at the rate the step's requests assume, and never fewer
                    # requests than are in flight (ab refuses -n below -c: --pools 2 at c=64).
                    warmup_requests=max(50, c, int(requests * WARMUP_SECONDS / params["step_seconds"])),
                    warmup_max_rounds=DEFAULT_WARMUP_MAX_ROUNDS, extra=extra)

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
        return Step(name=name, endpoint="database-dispatcher", concurrency=c,
                    requests=min(SWEEP_REQUESTS_FACTOR * n, max(MIN_SWEEP_REQUESTS, int(rate * params["step_seconds"]))),
                    setup={**self._props(size, size), **(props or {})}, pool="database",
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
        return [Step(name=name, endpoint=name, concurrency=c, requests=n,
                     setup=self._props(connections, threads), pool=dispatcher, probe="/status",
                     keep_alive=True,
                     extra={"pool_size": connections, "dispatcher_size": threads})
                for name, (connections, threads, dispatcher) in set_ups.items()]

    @contextlib.contextmanager
    def services(self, context, params: dict) -> Iterator[Services]:
        """PostgreSQL first: DATABASE_URL's, or a throwaway cluster on the load generator's core.
        The server gets the database through its environment: the password stays off its command line."""
        with postgres.database(context.children, context.progress, params.get("postgres_cpus")) as db:
            meter = CpuMeter(db.pgid) if db.pgid else None
            if meter:
                meter.start()
            try:
                yield Services(env=db.env(), handles={
                    "database": db, "meter": meter,
                    "postgres_cores": len(parse_cpu_list(db.cpus)) if db.cpus else (os.cpu_count() or 1)})
            finally:
                if meter:
                    meter.stop()

    def inspect_server(self, server, services: Services) -> dict:
        """/pools, plus what one query costs: its wall time alone (the app's /calibrate) and, when
        the driver runs PostgreSQL itself, the CPU PostgreSQL spent per query meanwhile and the
        cores it may use."""
        pools = server.pools()
        database = services.handles.get("database")
        postmaster = database.pgid if database else None
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
            calibration["postgres_cores"] = services.handles["postgres_cores"]
        pools["calibration"] = calibration
        return pools

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Two bounds, as in every lab: Little's law for the pool, min(c, threads, connections) /
        (time a query holds its connection), and PostgreSQL's CPU, cores / (CPU per query).
        The prediction is the lower of the two, or below both near their corner, where pul.model applies
        mean-value analysis (Little's law for the queue at PostgreSQL's CPU)."""
        threads = pools["pools"][step.pool]["threads"]
        connections = pools["pools"]["connections"]["threads"]
        calibration = pools["calibration"]
        alone_ms = float(calibration["median_ms"])
        busy_ms = float(pools["query_ms"]) + alone_ms
        in_service = min(step.concurrency, threads, connections)
        littles_law = in_service / (busy_ms / 1000.0)
        facts = {"query_alone_ms": alone_ms, "littles_law_requests_per_sec": round(littles_law, 1)}
        why = (f"min({step.concurrency} in flight, {threads} {step.pool}-dispatcher threads, "
               f"{connections} connections) / ({pools['query_ms']} ms wait + {alone_ms:g} ms query)")
        cpu_ms = calibration.get("postgres_cpu_ms")
        service_ms = round(busy_ms, 3)
        # Which of the three Little's law takes the minimum of limits the requests in service.
        pool_bound = ("connections" if connections < min(step.concurrency, threads) else
                      "threads" if threads < step.concurrency else "requests in flight")
        bounds = {pool_bound: round(littles_law, 1)}
        if params.get("postgres_cpus") is None or not cpu_ms:
            return Prediction(round(littles_law, 1), why, facts, service_ms, pool_bound, bounds, {pool_bound: why})
        cores = calibration["postgres_cores"]
        ceiling = cores / (cpu_ms / 1000.0)
        facts.update({
            "postgres_cpu_ms_per_query": cpu_ms,
            "postgres_cores": cores,
            "postgres_ceiling_requests_per_sec": round(ceiling, 1),
        })
        # Each query in service holds its connection for the wait, then queues for PostgreSQL's core:
        # pul.model predicts that loop by mean-value analysis, with the CPU its bound counts.
        facts.update(model.loop_facts(in_service, round(busy_ms - cpu_ms, 3), model.DATABASE_CPU, cores))
        bounds["database CPU"] = round(ceiling, 1)
        # The throwaway cluster runs on the load generator's cores (params()): pul.model adds ab's
        # CPU per request to the database's, since both spend those cores on every request.
        facts["database_on_load_cores"] = {"cores": cores, "cpu_ms": cpu_ms}
        arithmetic = {pool_bound: why, "database CPU": f"{cores} core(s) / {cpu_ms:g} ms of PostgreSQL CPU per query"}
        if step.extra.get("query_jitter") == 0:
            # Identical waits: the queries may come back together and queue for the core as one
            # convoy (pul.model.CONVOY: the prediction becomes a range, from that convoy up to the
            # smooth prediction), with all the CPU the shared core spends per request, read in the
            # round before the step, where the driver has it.
            facts[model.CONVOY] = {"in_service": in_service, "wait_ms": float(pools["query_ms"])}
        if ceiling < littles_law:
            return Prediction(round(ceiling, 1), arithmetic["database CPU"], facts, service_ms, "database CPU",
                              bounds, arithmetic)
        return Prediction(round(littles_law, 1), why, facts, service_ms, pool_bound, bounds, arithmetic)

    def verify_step(self, step: Step, server, record: dict, services: Services) -> None:
        """Record PostgreSQL's CPU during the measured run and the server's connection-timeout count."""
        body = server.get("/pools")
        if body:
            connections = json.loads(body)["pools"]["connections"]
            record["extra"]["connection_timeouts_so_far"] = connections["timeouts"]
        meter = services.handles.get("meter")
        if meter and record.get("duration_s"):
            end = time.monotonic()
            used = meter.between(end - record["duration_s"], end)
            if used is not None:
                record["extra"]["postgres_cpu_seconds"] = round(used, 2)
                record["extra"]["postgres_cpu_utilization"] = round(used / record["duration_s"], 2)
                if record.get("complete"):
                    record["extra"]["postgres_cpu_ms_per_request"] = round(used * 1000 / record["complete"], 3)
