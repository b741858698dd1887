"""The bottleneck model: every resource that can limit a step, and the one that does.

A lab's predict() gives the bounds it knows (Little's law for its pool's threads, a database's
CPU, an offered rate); this module adds the two every closed-loop step has, from a calibration
measured *before* the step's measured run:
- the server's CPU (the utilisation law): cores the server may use, less the JIT compiler's share
  of them in the calibration, / CPU seconds per request (the compiler's left out);
- the load generator's CPU: cores the load tool may use / its CPU seconds per request.
`bound_by` names the smallest bound. The prediction is that bound, except where the lab says its
requests wait a known time besides their CPU with every one of them in service (QUEUEING): there it
is the mean-value analysis of that closed loop, queueing for the bound's CPU, which lands below both
bounds near their corner and approaches the smaller far from it. (No bound from the round trip,
concurrency / (server + load-generator CPU per request): part of each side's CPU per request is
its tail after it has handed its message to the kernel (the server's connection re-arming its
read, its selector going back to wait, its workers scanning before they park; ab going back to
wait for the next answer), which overlaps the other side's work, so the sum is not a bound. It is the floor of a
range where the lab marks a loop with no wait of its own: ROUND_TRIP.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pul.lab imports this module
    from .lab import Prediction

THREADS = "threads"
CONNECTIONS = "connections"
SERVER_CPU = "server CPU"
# What a table calls SERVER_CPU under a CPU limit below the server's cores (shown_bound).
CPU_LIMIT = "CPU limit"
DATABASE_CPU = "database CPU"
LOAD_GENERATOR = "load generator"
IN_FLIGHT = "requests in flight"
OFFERED = "offered rate"
NAMES = (THREADS, CONNECTIONS, SERVER_CPU, DATABASE_CPU, LOAD_GENERATOR, IN_FLIGHT, OFFERED)

# A Prediction.facts key: {"cores", "cpu_ms"} of a database that shares the load generator's cores
# (lab 03's throwaway PostgreSQL), whose bound then counts both programs' CPU.
SHARED_DATABASE = "database_on_load_cores"
# A Prediction.facts key: {"in_service", "wait_ms", "at"} of requests whose identical waits may
# bring them back to the CPU of resource `at` together: lab 03's lockstep queries on the database's
# core (DATABASE_CPU, beside SHARED_DATABASE; the default), lab 02's and lab 05's identical sleeps
# on the server's (SERVER_CPU, beside a QUEUEING loop there: every pause, a GC's or the start of
# ab's connections, wakes the sleepers together). Such a step is predicted as a range: at worst a
# perfect convoy, every request back at the same moment, each cycle the wait plus the whole
# convoy's CPU (the floor, N / (wait + N x CPU per request / cores)); at best the requests spread
# out, the smooth mean-value analysis (the upper end). Any drift between them moves the step up
# from the floor. combine() adds "floor_requests_per_sec" and "smooth_requests_per_sec" to it.
CONVOY = "convoy"

# A Prediction.facts key: {"in_service", "wait_ms", "at"} of a closed loop in which `in_service`
# requests, each in service, wait `wait_ms` (a sleep, a downstream call, pg_sleep) and use the CPU of
# resource `at` (SERVER_CPU or DATABASE_CPU). combine() replaces it with what it predicted from it:
# {..., "cpu_ms", "cores", "requests_per_sec"}.
QUEUEING = "queueing"

# A Prediction.facts key: {"in_flight"} of a closed loop with no wait of its own (lab 05's echo),
# bound by the server's core. With few requests in flight, each one's load-generator CPU runs in
# series with its server CPU: while ab reads an answer and sends the next request, the core has
# nothing of that request to do, except the tail of the server's own work on the last one, which
# overlaps ab's. Such a step is predicted as a range: near worst, the round trip in series, the
# exact mean-value analysis of the loop's two queues, the server's core and ab's one thread (one in
# flight: 1 / (server + load-generator CPU per request)); at best the core's bound. (Not a strict
# worst: a wake-up's latency is charged to neither program.) Only where that floor is below
# ROUND_TRIP_SHOWN of the bound: with more in flight the core has the next request queued and the
# floor meets the bound. Not under a CPU limit of less than a core. combine() adds "load_cpu_ms",
# "cpu_ms", "cores" and "floor_requests_per_sec".
ROUND_TRIP = "round_trip"
ROUND_TRIP_SHOWN = 0.95

# The load tools' threads: ab is one thread; wrk runs WRK_THREADS (scripts/lib/bench.sh) of them.
TOOL_THREADS = {"ab": 1, "wrk": 2}


# The JIT compiler's share of the server's cores that the bound takes out: at most this much
# (a calibration round that was all compiling would otherwise leave no bound at all), and named
# in the arithmetic from this much.
MAX_COMPILER_SHARE = 0.9
SHOWN_COMPILER_SHARE = 0.01


def compiler_share(calibration: dict) -> float:
    """The JIT compiler's lasting use of the server's cores, in cores (CPU seconds per second; the
    least of the calibrating rounds, pul.run), which the server-CPU bound leaves out: at most
    MAX_COMPILER_SHARE of them, 0 where the driver could not read it."""
    cores = calibration.get("server_cores") or 1
    return min(max(calibration.get("jit_share") or 0.0, 0.0), MAX_COMPILER_SHARE * cores)


# A run that served each request with this much more or less CPU than its calibration found (the
# compiler's share left out of both) ran on a core at another speed than the one calibrated: the
# host can slow a core with no trace in the guest but the steadiness probe's, which runs only
# before and after the whole run. Well beyond how far a step usually moves between the two; a
# census step off by 35% (at 1.52 of its bound, the probe at 84% of its fastest) had the host's
# slowing in its calibration. The driver measures such a step again (a step may set its own
# limit: Step.remeasure_drift), up to MEASUREMENTS times in all.
REMEASURE_DRIFT = 0.25
MEASUREMENTS = 3
# The key of a variant's extra that says its calibration and its run disagreed in all MEASUREMENTS:
# the host moved the core's speed within the run, which the probes around the run may not see.
UNSTEADY = "unsteady"


def serving_drift(v: dict) -> float | None:
    """How much more (+) or less (-) CPU the run spent serving a request than its calibration, the
    JIT compiler's part left out of both, as a share of the calibration's; None where the server's
    CPU is not what the step is predicted by, or a reading is missing."""
    calibrated = (v.get("calibration") or {}).get("server_cpu_ms")
    serving = serving_cpu_ms(v)
    if v.get("bound_by") != SERVER_CPU or not calibrated or serving is None:
        return None
    return serving / calibrated - 1


def serving_cpu_ms(v: dict) -> float | None:
    """The server's CPU per request during the run with the JIT compiler's part left out, as a
    calibration leaves it out: the measured CPU per request less the compiler's share of the run
    (in cores) x 1000 / the rate. None where a reading is missing."""
    during, rate = v.get("server_cpu_ms_per_request"), v.get("requests_per_sec")
    if not during or not rate:
        return None
    return during - (v.get("jit_share") or 0.0) * 1000 / rate


def limit_binds(calibration: dict | None) -> bool:
    """Whether a CPU limit below the server's cores bound it: the calibration records one only
    then, as the cores the server had (pul.run.calibration)."""
    return (calibration or {}).get("cpu_limit") is not None


def server_busy(v: dict) -> float | None:
    """How busy the server's CPU was in a variant's measured run: its CPU seconds per second, and
    under a CPU limit that bound it, as a share of the limit (0.5 CPU used of 0.5: 1.0)."""
    used = v.get("server_cpu_utilization")
    calibration = v.get("calibration") or {}
    if used is None or not limit_binds(calibration):
        return used
    return round(used / calibration["cpu_limit"], 2)


def shown_bound(v: dict) -> str | None:
    """The bound a table names: the server's CPU is "CPU limit" where a limit below its cores was it."""
    bound = v.get("bound_by")
    return CPU_LIMIT if bound == SERVER_CPU and limit_binds(v.get("calibration")) else bound


def cpu_bound(cores: float, cpu_ms: float) -> float:
    """Requests/s a resource of `cores` cores serves at `cpu_ms` of CPU per request."""
    return cores / (cpu_ms / 1000.0)


def _arithmetic(cores: float, cpu_ms: float, what: str) -> str:
    return f"{cores:g} core{'s' if cores != 1 else ''} / {cpu_ms:.3g} ms of {what} CPU per request"


def combine(prediction: Prediction, calibration: dict | None, concurrency: int,
            open_loop: bool = False) -> Prediction:
    """The lab's prediction with the CPU bounds from `calibration` added, and the smallest named.

    calibration: {"server_cpu_ms", "server_cores", "load_cpu_ms", "load_cores", "jit_share"} (any may
    be None), and "cpu_limit" (the server's CPU limit in CPUs) where it ran under one.
    An open-loop step's load is its rate, so the load generator's closed-loop bound is left out."""
    bounds = dict(prediction.bounds)
    if prediction.requests_per_sec is not None and prediction.bound_by and prediction.bound_by not in bounds:
        bounds[prediction.bound_by] = prediction.requests_per_sec
    why = dict(prediction.arithmetic)
    if prediction.bound_by and prediction.bound_by not in why:
        why[prediction.bound_by] = prediction.explanation
    calibration = calibration or {}
    server_ms, server_cores = calibration.get("server_cpu_ms"), calibration.get("server_cores")
    if server_ms and server_cores:
        # The JIT compiler's threads share the server's cores: what they took of the calibration
        # round (right before the measured run, at its settings) is not there to serve requests.
        compiler = compiler_share(calibration)
        serving_cores = server_cores - compiler
        bounds[SERVER_CPU] = round(cpu_bound(serving_cores, server_ms), 1)
        # Under a CPU limit that binds (fewer CPUs of time than cores), the quota is the cores.
        cores = (f"{server_cores:g} CPU (the CPU limit)" if limit_binds(calibration)
                 else f"{server_cores:g} core{'s' if server_cores != 1 else ''}")
        why[SERVER_CPU] = f"{cores} / {server_ms:.3g} ms of server CPU per request"
        if compiler >= SHOWN_COMPILER_SHARE:
            why[SERVER_CPU] = (f"({cores} - {compiler:.2f} of a core the JIT compiler's) / {server_ms:.3g} ms "
                               "of server CPU per request")
    load_ms, load_cores = calibration.get("load_cpu_ms"), calibration.get("load_cores")
    shared = prediction.facts.get(SHARED_DATABASE)
    shared_ms = calibration.get("load_cores_cpu_ms")
    if shared and DATABASE_CPU in bounds and not open_loop:
        # The database runs on the load generator's cores: its bound is theirs.
        cores = shared["cores"]
        if shared_ms:
            # The calibration round measured all the database's cores spent per request at this
            # step's concurrency (the database, ab, the driver): the utilisation law on them. The
            # database's CPU per query timed alone (the lab's own calibration, one query at a time)
            # missed by a third either way between runs.
            bounds[DATABASE_CPU] = round(cpu_bound(cores, shared_ms), 1)
            why[DATABASE_CPU] = (f"{cores:g} core{'s' if cores != 1 else ''} / {shared_ms:.3g} ms of CPU per "
                                 f"request on the database's core(s), which it shares with the load generator "
                                 f"(calibrated at c={concurrency})")
        elif load_ms:
            # Without that reading: both programs spend those cores on every request.
            database_ms = shared["cpu_ms"]
            both = round(cpu_bound(cores, database_ms + load_ms), 1)
            if both < bounds[DATABASE_CPU]:
                bounds[DATABASE_CPU] = both
                why[DATABASE_CPU] = (f"{cores:g} core{'s' if cores != 1 else ''} / ({database_ms:.3g} ms of database + "
                                     f"{load_ms:.3g} ms of load-generator CPU per request), on the same core(s)")
    elif load_ms and load_cores and not open_loop:
        bounds[LOAD_GENERATOR] = round(cpu_bound(load_cores, load_ms), 1)
        why[LOAD_GENERATOR] = _arithmetic(load_cores, load_ms, "load-generator")
    if not bounds:
        return prediction
    bound_by = min(bounds, key=bounds.get)
    predicted, explanation, facts = bounds[bound_by], why[bound_by], dict(prediction.facts)
    queueing = _queueing(prediction.facts.get(QUEUEING), bounds, server_cores)
    if queueing:
        facts[QUEUEING] = queueing
        if queueing["requests_per_sec"] < predicted:
            predicted = queueing["requests_per_sec"]
            explanation += "; " + queueing_arithmetic(queueing)
    elif QUEUEING in facts:
        del facts[QUEUEING]
    upper = None
    convoy = _convoy(prediction.facts.get(CONVOY), bounds, shared, shared_ms, queueing)
    if convoy and convoy["floor_requests_per_sec"] < predicted:
        # Identical waits: anywhere from the perfect convoy up to the smooth prediction.
        facts[CONVOY] = {**convoy, "smooth_requests_per_sec": predicted}
        upper, predicted = predicted, convoy["floor_requests_per_sec"]
        # The convoy forms at that CPU; what holds the requests back (a pool, or the load generator's
        # requests in flight) still names the bound.
        if convoy["at"] == DATABASE_CPU or bound_by not in (THREADS, CONNECTIONS, IN_FLIGHT):
            bound_by = convoy["at"]
        explanation = f"{RANGES[CONVOY].clause(facts[CONVOY], upper)} ({explanation})"
    trip = _round_trip(prediction.facts.get(ROUND_TRIP), server_ms, server_cores, load_ms, open_loop)
    if trip and upper is None and bound_by == SERVER_CPU and trip["floor_requests_per_sec"] < ROUND_TRIP_SHOWN * predicted:
        facts[ROUND_TRIP] = trip
        upper, predicted = predicted, trip["floor_requests_per_sec"]
        explanation = f"{RANGES[ROUND_TRIP].clause(trip, upper)} ({explanation})"
    elif ROUND_TRIP in facts:
        del facts[ROUND_TRIP]
    return replace(prediction, requests_per_sec=predicted, bound_by=bound_by, bounds=bounds,
                   arithmetic=why, explanation=explanation, facts=facts, upper=upper)


def _round_trip(trip: dict | None, server_ms: float | None, server_cores: float | None, load_ms: float | None,
                open_loop: bool) -> dict | None:
    """A ROUND_TRIP loop's floor (round_trip_floor) from the calibrated CPU per request of the server
    and of the load generator. None without the loop or either calibration, in an open loop (no
    round trip), or on less than a whole core (a CPU limit)."""
    if not trip or open_loop or not load_ms or not server_ms or not server_cores or server_cores < 1:
        return None
    floor = round_trip_floor(trip["in_flight"], server_ms, server_cores, load_ms)
    return {"in_flight": trip["in_flight"], "load_cpu_ms": round(load_ms, 4), "cpu_ms": round(server_ms, 4),
            "cores": server_cores, "floor_requests_per_sec": round(floor, 1)}


def round_trip_floor(in_flight: int, server_ms: float, server_cores: float, load_ms: float,
                     load_threads: int = TOOL_THREADS["ab"]) -> float:
    """Requests/s of `in_flight` requests going round a closed loop of two queues, the server's cores
    (`server_ms` of CPU per request, shared by `server_cores`: Seidmann's approximation, one core
    1/cores as fast plus the rest as a delay) and the load generator's threads (`load_ms` per
    request): exact mean-value analysis, one request at a time."""
    server_demand, load_demand = server_ms / server_cores, load_ms / load_threads
    delay = server_ms * (server_cores - 1) / server_cores
    server_queue = load_queue = 0.0
    rate = 0.0
    for n in range(1, in_flight + 1):
        at_server = server_demand * (1 + server_queue)
        at_load = load_demand * (1 + load_queue)
        rate = n / (delay + at_server + at_load)
        server_queue, load_queue = rate * at_server, rate * at_load
    return rate * 1000.0


def round_trip_arithmetic(trip: dict) -> str:
    """'1 request / (0.275 ms of server CPU + 0.061 ms of load-generator CPU) = 2,976 req/s', or,
    with more in flight, the mean-value analysis it is."""
    if trip["in_flight"] == 1 and trip["cores"] == 1:
        return (f"1 request / ({trip['cpu_ms']:.3g} ms of server CPU + {trip['load_cpu_ms']:.3g} ms of "
                f"load-generator CPU) = {trip['floor_requests_per_sec']:,.0f} req/s")
    cores = trip["cores"]
    return (f"mean-value analysis: {trip['in_flight']} in flight, each using {trip['cpu_ms']:.3g} ms of the server's "
            f"{'core' if cores == 1 else f'{cores:g} cores'} and {trip['load_cpu_ms']:.3g} ms of the load generator's, "
            f"queueing at both: {trip['floor_requests_per_sec']:,.0f} req/s")


def round_trip_facts(in_flight: int) -> dict:
    """Prediction.facts for a closed loop with no wait of its own (ROUND_TRIP)."""
    return {ROUND_TRIP: {"in_flight": in_flight}}


def _convoy(convoy: dict | None, bounds: dict, shared: dict | None, shared_ms: float | None,
            queueing: dict | None) -> dict | None:
    """A CONVOY step's floor, N / (wait + N x s / cores). At the database (lab 03): s all the CPU the
    database's cores spend per request (calibrated before the step: the database's, ab's, the
    driver's), else the database's own per query. At the server: the CPU per request and the cores
    its QUEUEING loop used (the compiler's share counted). None where the step has no convoy or its
    resource no bound."""
    if not convoy:
        return None
    at = convoy.get("at", DATABASE_CPU)
    if at == SERVER_CPU:
        if not queueing or queueing["at"] != SERVER_CPU:
            return None
        cpu_ms, cores = queueing["cpu_ms"], queueing["cores"]
    else:
        if not shared or DATABASE_CPU not in bounds:
            return None
        cpu_ms, cores = shared_ms or shared["cpu_ms"], shared["cores"]
    n, wait_ms = convoy["in_service"], convoy["wait_ms"]
    floor = convoy_floor(n, wait_ms, cpu_ms, cores)
    return {"in_service": n, "wait_ms": wait_ms, "at": at, "cpu_ms": round(cpu_ms, 4), "cores": cores,
            "floor_requests_per_sec": round(floor, 1)}


def convoy_floor(in_service: int, wait_ms: float, cpu_ms: float, cores: float) -> float:
    """Requests/s of the perfect convoy: all `in_service` requests wait `wait_ms` at once, then queue
    for `cores` cores, `cpu_ms` each, N / (wait + N x s / cores)."""
    return in_service / ((wait_ms + in_service * cpu_ms / cores) / 1000.0)


def convoy_arithmetic(convoy: dict) -> str:
    """'32 queries / (80 ms wait + 32 x 2.4 ms of CPU per request on 1 core) = 204 req/s'."""
    cores = convoy["cores"]
    what = "requests" if convoy.get("at") == SERVER_CPU else "queries"
    return (f"{convoy['in_service']} {what} / ({convoy['wait_ms']:g} ms wait + {convoy['in_service']} x "
            f"{convoy['cpu_ms']:.3g} ms of CPU per request on {cores:g} core{'s' if cores != 1 else ''}) = "
            f"{convoy['floor_requests_per_sec']:,.0f} req/s")


@dataclass(frozen=True)
class RangeKind:
    """How a prediction made a range (CONVOY, ROUND_TRIP) names its two ends: in the tables and
    sentences, and in the checks' band labels, which the test census records by name."""

    key: str  # where the variant's extra keeps the range's arithmetic (CONVOY, ROUND_TRIP)
    floor: str  # its lower end, "the convoy"
    upper: str  # its upper end, "the smooth prediction"
    route: str  # how the floor comes about, "in lockstep, from the perfect convoy"
    floor_check: str  # the checks' label of the floor's side, "over the convoy floor"
    upper_check: str  # and of the upper end's, "over the smooth upper end"
    arithmetic: Callable[[dict], str]

    def clause(self, facts: dict, upper: float) -> str:
        """'in lockstep, from the perfect convoy, 32 queries / (...) = 204 req/s, up to the smooth
        prediction, 352 req/s'."""
        return f"{self.route}, {self.arithmetic(facts)}, up to {self.upper}, {upper:,.0f} req/s"


RANGES = {
    CONVOY: RangeKind(CONVOY, "the convoy", "the smooth prediction", "in lockstep, from the perfect convoy",
                      "over the convoy floor", "over the smooth upper end", convoy_arithmetic),
    ROUND_TRIP: RangeKind(ROUND_TRIP, "the round trip", "the core's bound", "from the round trip in series",
                          "over the round trip's floor", "under the core's bound", round_trip_arithmetic),
}


def range_kind(v: dict) -> RangeKind | None:
    """The kind of range a variant was predicted as, or None for a single number."""
    if not v.get("predicted_upper_requests_per_sec"):
        return None
    extra = v.get("extra") or {}
    return next((kind for kind in RANGES.values() if "floor_requests_per_sec" in (extra.get(kind.key) or {})), None)


def _queueing(loop: dict | None, bounds: dict, server_cores: float | None) -> dict | None:
    """The mean-value analysis of a QUEUEING loop at its CPU, from that CPU's bound (cores / the CPU
    per request it was worked out from, the compiler's share and a shared core's other programs
    counted), or None where the loop or the bound is missing."""
    if not loop or loop["at"] not in bounds or not bounds[loop["at"]]:
        return None
    cores = loop.get("cores") or (server_cores if loop["at"] == SERVER_CPU else None)
    if not cores:
        return None
    cpu_ms = cores * 1000.0 / bounds[loop["at"]]
    rate = mean_value_analysis(loop["in_service"], loop["wait_ms"] + cpu_ms, cpu_ms, cores)
    return {"in_service": loop["in_service"], "wait_ms": loop["wait_ms"], "at": loop["at"],
            "cpu_ms": round(cpu_ms, 4), "cores": cores, "requests_per_sec": round(rate, 1)}


def queueing_arithmetic(queueing: dict) -> str:
    """'with queueing for the server CPU (mean-value analysis: 50 in service, each waiting 30 ms
    and using 0.6 ms of its core): 1,492 req/s'."""
    cores = queueing["cores"]
    where = "its core" if cores == 1 else f"its {cores:g} cores"
    return (f"with queueing for the {queueing['at']} (mean-value analysis: {queueing['in_service']} in service, "
            f"each waiting {queueing['wait_ms']:g} ms and using {queueing['cpu_ms']:.3g} ms of {where}): "
            f"{queueing['requests_per_sec']:,.0f} req/s")


def loop_facts(in_service: int, wait_ms: float, at: str = SERVER_CPU, cores: float | None = None) -> dict:
    """Prediction.facts for a closed loop whose every request is in service (QUEUEING)."""
    return {QUEUEING: {"in_service": in_service, "wait_ms": wait_ms, "at": at,
                       **({"cores": cores} if cores else {})}}


def in_lockstep(facts: dict) -> dict:
    """`facts` with its QUEUEING loop's waits marked identical (CONVOY at the same CPU): a range
    from the perfect convoy up to the loop's smooth prediction. Unchanged without such a loop."""
    loop = facts.get(QUEUEING)
    if not loop:
        return facts
    return {**facts, CONVOY: {"in_service": loop["in_service"], "wait_ms": loop["wait_ms"], "at": loop["at"]}}


def mean_value_steps(connections: int, busy_ms: float, cpu_ms: float, cores: int = 1) -> list[dict]:
    """The mean-value analysis of mean_value_analysis, one row per connection added: for n = 1 ..
    `connections`, {"n", "at_cpu_ms": R(n), the time a request spends at the CPU, queueing and
    working; "requests_per_sec": λ(n); "queue": Q(n), the requests at the CPU on average} (chapter 3's
    worked table). On one core R(n) = cpu_ms x (1 + Q(n - 1)) and λ(n) = n / (busy_ms - cpu_ms + R(n))."""
    demand = cpu_ms / cores
    delay = max(busy_ms - cpu_ms, 0.0) + cpu_ms * (cores - 1) / cores
    queue = 0.0
    rows = []
    for n in range(1, connections + 1):
        at_cpu = demand * (1 + queue)          # the queue an arriving query finds, then its own work
        throughput = n / (delay + at_cpu)      # Little's law for the whole loop
        queue = throughput * at_cpu            # Little's law at the CPU
        rows.append({"n": n, "at_cpu_ms": at_cpu, "requests_per_sec": throughput * 1000.0, "queue": queue})
    return rows


def mean_value_analysis(connections: int, busy_ms: float, cpu_ms: float, cores: int = 1) -> float:
    """Requests/s of `connections` requests in a closed loop that each take `busy_ms`, of which
    `cpu_ms` on a CPU (`cores` of them, shared) and the rest waiting (a sleep, pg_sleep, the
    network): lab 03's queries on PostgreSQL's core, lab 01's offloaded requests on the server's.

    Exact mean-value analysis of that closed queueing network, one connection at a time: Little's
    law gives the queue each new connection finds at the CPU, and the time it then spends there
    (mean_value_steps). Several cores: Seidmann's approximation (one core 1/cores as fast, plus the
    rest as a delay)."""
    steps = mean_value_steps(connections, busy_ms, cpu_ms, cores)
    return steps[-1]["requests_per_sec"] if steps else 0.0
