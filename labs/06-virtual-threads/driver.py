"""Lab 06: virtual threads (Java 21+) against Play's default dispatcher and a sized pool.

The server is built with JDK 17 like every lab and runs on a newer runtime (pul.runtimes): Java 25
for most variants, Java 21 for the two that show what JEP 491 (JDK 24) changed. Four questions,
each a group of variants:
  blocking    30 ms of blocking work at c=50 on the default dispatcher, a 100-thread pool, and
              virtual threads (an Akka dispatcher from Java, an execution context from Scala);
  pinning     the same work inside a `synchronized` block on virtual threads, on Java 25 and 21,
              with plain virtual threads on Java 21 beside it;
  footprint   c=1000 on virtual threads, on the 100-thread pool, and on a pool with a thread per
              request in flight: the threads and resident memory each needed;
  jdbc        virtual threads running a PostgreSQL query (pg_sleep) through HikariCP pools of
              several sizes (resized while the server runs): the connections still bound the
              throughput.
Every Java 25 variant shares one server, the Java 21 ones another: a cold JVM's warm-up is most
of a run's time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
from typing import Iterator

from pul import model, postgres
from pul.errors import LabError, UsageError
from pul.lab import Lab, Prediction, Services, Step

# The runtime of every variant but the Java 21 ones: the newest the project installs.
NEWEST = "jdk25"
JDK21 = "jdk21"
# A warm-up round's length (seconds); rounds repeat until two agree (pul.run.warm_up).
WARMUP_SECONDS = 2
# Warm-up and calibration rounds of the c=1000 variants.
HIGH_WARMUP_SECONDS = 3
# A calibration round at c=1000 sends this many times the concurrency: a round of twice it is
# mostly its first burst of a thousand connections at once, whose CPU per request differed from
# the measured run's by 7-17% either way in eleven runs.
CALIBRATION_ROUND_FACTOR = 5
# The pinned variant serves ~33 req/s: one round is enough to start it (virtual-jdk21's warm-up
# before it has compiled the request path), none settles faster.
PINNED_WARMUP_SECONDS = 3
# Queries /calibrate times alone, after its own warm-up: CALIBRATION_RUNS at most, fewer for a long
# query (an exercise's 200 ms), about CALIBRATION_SECONDS of them and MIN_CALIBRATION_RUNS at least.
# At the default 20 ms, 50 queries; 53 of 200 ms took 10.6 s before every measurement of a check.
CALIBRATION_RUNS = 50
CALIBRATION_SECONDS = 1.0
MIN_CALIBRATION_RUNS = 10


def calibration_runs(query_ms: float) -> int:
    """How many queries /calibrate times alone for a query of query_ms."""
    return max(MIN_CALIBRATION_RUNS, min(CALIBRATION_RUNS, round(CALIBRATION_SECONDS * 1000 / max(query_ms, 1))))
# Most connections a step may ask for: the throwaway cluster allows 100.
MAX_CONNECTIONS = 90


def parse_sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in str(text).split(",") if part.strip())
    except ValueError:
        raise UsageError(f"--connections takes a comma-separated list of pool sizes, e.g. 4,16 (got {text!r})")
    if any(n < 1 or n > MAX_CONNECTIONS for n in sizes):
        raise UsageError(f"--connections: every size must be between 1 and {MAX_CONNECTIONS} "
                         f"(the throwaway cluster allows 100 connections; got {text!r})")
    return sizes


class VirtualThreads(Lab):
    # Every request sleeps the same work_ms (labs 01 and 02 too): a range from the convoy at the
    # core up to the smooth prediction (pul.model.CONVOY). On a 2-core Intel Xeon `default` ran at
    # 0.82 of its 8 threads / 30 ms, with 1.8 ms of CPU per request.
    LOCKSTEP = True
    OPTION_HELP = {**Lab.OPTION_HELP,
                   "high_concurrency": "requests in flight for the footprint variants (ab -c)",
                   "query_ms": "PostgreSQL's wait per query (pg_sleep), in ms",
                   "seconds": "seconds each measured run lasts at most"}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--connections", default=self.defaults["connections"], metavar="N,N",
                            help="HikariCP pool sizes of the jdbc variants (default %(default)s; "
                                 "empty: no database, no jdbc variants)")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        params["connections"] = ",".join(map(str, parse_sizes(options.connections)))
        if params["high_concurrency"] > 20_000:
            raise UsageError("--high-concurrency must be at most 20000 (ab's own limit)")
        # PostgreSQL runs on the load generator's core, so that the server keeps its own.
        pinned = not getattr(options, "no_pin", False) and (os.cpu_count() or 1) >= 2
        params["postgres_cpus"] = (getattr(options, "load_cpus", None) or "1") if pinned else None
        return params

    def server_properties(self, params: dict) -> dict[str, str]:
        properties = {f"lab.{key.replace('_', '-')}": str(params[key])
                      for key in ("pool_size", "work_ms", "query_ms", "high_concurrency")}
        sizes = parse_sizes(params["connections"])
        if sizes:
            # The pool the server starts with; each jdbc variant sets its own (POST /connections).
            properties["lab.connections"] = str(sizes[0])
        return properties

    # -- what to run ------------------------------------------------------
    def steps(self, params: dict) -> list[Step]:
        c, seconds = params["concurrency"], params["seconds"]

        def blocking(name: str, endpoint: str, pool: str, runtime: str = NEWEST, **more) -> Step:
            settings = {"concurrency": c, "requests": params["requests"], "seconds": seconds,
                        "warmup_requests": params["requests"], "warmup_seconds": WARMUP_SECONDS,
                        "watch_footprint": True, **more}
            return Step(name=name, endpoint=endpoint, pool=pool, service_ms=params["work_ms"], runtime=runtime,
                        **settings)

        def jdbc(size: int) -> Step:
            # HikariCP's pool resized while the server runs, before each of the step's rounds. Its
            # connections bind it, far below the core's bound: the JIT's progress does not move its
            # rate, so one round warms it up (and fills the pool), compiler busy or not, after the
            # steps before it on its server (first on one, it warms up as any step). Two rounds
            # would often disagree by more than 10% (680 then 760 req/s, the pool still growing in
            # the first), which costs calibration rounds more.
            return Step(name=f"jdbc-connections={size}", endpoint="jdbc-virtual", concurrency=c,
                        requests=params["requests"], seconds=seconds, pool="virtual", runtime=NEWEST,
                        configure={"lab.connections": f"/connections?size={size}"},
                        warmup_requests=params["requests"], warmup_max_rounds=1,
                        warmup_max_rounds_first=Step.warmup_max_rounds,
                        warmup_seconds=WARMUP_SECONDS, warmup_jit_quiet=None, watch_footprint=True,
                        extra={"group": "jdbc", "connections": size})

        high = params["high_concurrency"]
        sizes = parse_sizes(params["connections"])
        # 1,000 in flight move the server's CPU per request more from round to round than 50 do
        # (0.31-0.50 ms in the same set-up): longer rounds, and the median of three calibrates.
        # The c=50 variants before them have compiled the request path (the JIT took 1-6% of a
        # round here), and rounds this noisy would rarely agree: one round starts the pool's threads
        # (a step run alone, first on a cold server, warms up as any step).
        footprint = {"concurrency": high, "watch_listen_queue": True, "warmup_seconds": HIGH_WARMUP_SECONDS,
                     "warmup_max_rounds": 1, "warmup_max_rounds_first": Step.warmup_max_rounds,
                     "calibration_rounds": 3, "calibration_requests": CALIBRATION_ROUND_FACTOR * high,
                     "extra": {"group": "footprint"}}
        return [
            # Thread-bound far below the core: the JIT's progress does not move its rate, so no
            # waiting for it to settle (the next variants' warm-ups do that at ~6x the rate).
            blocking("default", "blocking-default", "default", warmup_max_rounds=1, warmup_jit_quiet=None),
            blocking("virtual", "blocking-virtual", "virtual"),
            # The Scala twin of `virtual`: the same work on the same kind of thread, measured when
            # named (its ~20 s would push the default run past three minutes).
            blocking("scala-virtual", "scala-virtual", "virtual", named_only=True),
            # After `virtual` on its server, the same code on the same threads: its rounds swing by a
            # quarter either way at the knee (1,026-1,357 req/s, the compiler 12-17% busy) and
            # seldom settle in eight, so four at most; an unsettled warm-up calibrates again. First on
            # a cold server (run alone), it warms up as any step.
            blocking("synchronized-jdk25", "virtual-synchronized", "virtual", warmup_max_rounds=4,
                     warmup_max_rounds_first=Step.warmup_max_rounds, extra={"group": "pinning"}),
            *(jdbc(size) for size in sizes[:1]),
            # The footprints. A pool starts its threads as tasks arrive, and its idle threads exit
            # after a second (keep-alive-time in application.conf): each variant's count is its own.
            blocking(f"virtual-c={high}", "blocking-virtual", "virtual", **footprint),
            blocking("pool", "blocking-pool", "pool"),
            blocking(f"pool-c={high}", "blocking-pool", "pool", **footprint),
            # A thread per request in flight: the pool a thread-per-request server would need.
            blocking(f"per-request-pool-c={high}", "blocking-per-request-pool", "per-request", **footprint),
            *(jdbc(size) for size in sizes[1:]),
            blocking("virtual-jdk21", "blocking-virtual", "virtual", JDK21, extra={"group": "pinning"}),
            blocking("synchronized-jdk21", "virtual-synchronized", "carriers", JDK21,
                     warmup_seconds=PINNED_WARMUP_SECONDS, warmup_max_rounds=1, warmup_jit_quiet=None,
                     extra={"group": "pinning"}),
        ]

    @contextlib.contextmanager
    def services(self, context, params: dict) -> Iterator[Services]:
        """PostgreSQL for the jdbc variants (DATABASE_URL's, or a throwaway cluster on the load
        generator's core); nothing when no variant needs it."""
        if not parse_sizes(params["connections"]):
            yield Services()
            return
        with postgres.database(context.children, context.progress, params.get("postgres_cpus")) as db:
            yield Services(env=db.env(), handles={"database": db,
                                                  "calibration_runs": calibration_runs(float(params["query_ms"]))})

    def inspect_server(self, server, services: Services) -> dict:
        """/pools, plus the query's wall time alone (the app's /calibrate) when a database is there."""
        pools = server.pools()
        if services.handles.get("database"):
            body = server.get(f"/calibrate?runs={services.handles['calibration_runs']}", timeout=60)
            if not body:
                raise LabError("the server did not answer /calibrate (timing the query alone); see its log")
            pools["calibration"] = json.loads(body)
        return pools

    # -- prediction -------------------------------------------------------
    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Little's law on what holds a request: a dispatcher's threads, the carriers of a pinned
        virtual thread, or a connection. Virtual threads bound nothing themselves (threads null)."""
        if step.endpoint == "jdbc-virtual":
            return self._predict_jdbc(step, pools)
        if step.pool == "carriers":
            carriers = pools["pools"]["carriers"]["threads"]
            why = (f"min({step.concurrency} in flight, {carriers} carrier thread(s)) / {step.service_ms:g} ms: "
                   "a virtual thread that blocks inside `synchronized` keeps its carrier")
            rate = round(min(step.concurrency, carriers) / (step.service_ms / 1000.0), 1)
            return Prediction(rate, why, {"carriers": carriers}, bound_by=model.THREADS,
                              bounds={model.THREADS: rate}, arithmetic={model.THREADS: why})
        return super().predict(step, pools, params)

    def _predict_jdbc(self, step: Step, pools: dict) -> Prediction:
        # The pool's size as the server reports it after the step's POST /connections, if any.
        connections = pools["pools"]["connections"]["threads"]
        hold_ms = float(pools["calibration"]["mean_ms"])
        in_service = min(step.concurrency, connections)
        rate = round(in_service / (hold_ms / 1000.0), 1)
        why = (f"min({step.concurrency} in flight, {connections} connections) / {hold_ms:g} ms a query holds "
               "its connection (timed alone)")
        bound_by = model.CONNECTIONS if connections < step.concurrency else model.IN_FLIGHT
        facts = {"query_alone_ms": hold_ms}
        if in_service == step.concurrency:
            facts.update(model.loop_facts(in_service, hold_ms))
        return Prediction(rate, why, facts, round(hold_ms, 3), bound_by, {bound_by: rate}, {bound_by: why})

    def verify_step(self, step: Step, server, record: dict, services: Services) -> None:
        """The server ran the runtime, the kind of thread and the pool of connections the step meant: its
        /pools names the Java release and the pool's size, and the endpoint's answer names the thread
        it ran on."""
        pools = json.loads(server.get("/pools") or "{}")
        wanted = {NEWEST: 25, JDK21: 21}[step.runtime]
        if pools.get("java_version") != wanted:
            raise LabError(f"{step.name} meant to run on Java {wanted}, but the server reports Java "
                           f"{pools.get('java_version')} (its JAVA_HOME: see the server log)")
        body = (server.get(self.path(step.endpoint)) or b"").decode(errors="replace")
        virtual = step.pool in ("virtual", "carriers")
        if virtual != ("VirtualThread" in body):
            raise LabError(f"{step.name}: {self.path(step.endpoint)} answered {body[:120]!r}, "
                           f"which says it {'did not run' if virtual else 'ran'} on a virtual thread")
        if "lab.connections" in step.configure:
            served = ((pools.get("pools") or {}).get("connections") or {}).get("threads")
            if served != step.extra["connections"]:
                raise LabError(f"{step.name} meant to run with {step.extra['connections']} connections, but the "
                               f"server's pool has {served} (POST /connections: see the server log)")
        record["extra"]["java_version"] = pools["java_version"]
        record["extra"]["jvm_threads_after"] = pools.get("jvm_threads")

    def path(self, endpoint: str) -> str:
        """An endpoint's URL path, from bench.sh's PATHS."""
        match = re.search(rf"\[{re.escape(endpoint)}\]=(\S+)", self.bench.read_text())
        if not match:
            raise LabError(f"{self.bench} has no path for {endpoint}")
        return match.group(1)
