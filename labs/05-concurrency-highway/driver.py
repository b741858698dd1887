"""Lab 05: the concurrency highway -- a ladder of concurrencies, Little's law, and an open-loop check.

Three sweeps against one server:
  c=N           the JSON echo (pure CPU on Play's default dispatcher) at c = 1, 2, 4, ... (ab, closed loop)
  fixed-c=N     the same echo behind a fixed service time on a fixed pool: capacity known in advance
  open-A-rate=R the fixed endpoint at fixed request rates below, near and past its capacity (open loop),
                each with random (A = poisson) and evenly spaced (A = even) arrivals
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from pul import model
from pul.checks import ab_max_concurrency
from pul.errors import UsageError
from pul.lab import Lab, Prediction, Step

# Each step sends at least this many times c requests. A closed-loop run ends with a drain:
# the last c requests finish while no new ones start, which lowers the average number in
# flight by about c * R / (2 T) = c / (2 * this); at 10 the drain costs at most 5 %.
REQUESTS_PER_CONCURRENCY = 10
# An echo step's calibration: the median of three rounds (one slowed round once put c=16 at
# 1.27 of its bound), each about a second at the echo's rate. Rounds of 4,000 requests were
# tried: the default run took 267 s instead of 177 s, and its steps landed no nearer their
# bounds (0.84-1.22 against 0.78-1.07): on one core of this machine a step moves by up to 15%
# between its calibration and its measured run, whatever the rounds' length.
CALIBRATION_REQUESTS = 2000
CALIBRATION_ROUNDS = 3
# An echo step whose run served each request with more than this share more or less CPU than its
# calibration is calibrated and measured again (pul.run, at most pul.model.MEASUREMENTS times):
# the host moved the core's speed between the two. Tighter than the driver's default quarter: the
# echo is the sweep whose every step the core binds, and a step re-measured costs about 3 s.
REMEASURE_DRIFT = 0.15
# The sweep's one warm-up: rounds of at most this many seconds, at most this many of them. A
# round of the step's 8,000 requests took 25 s at the cold server's 300 req/s, and eight such
# rounds (75 s, 40% of the default run) still ended with the JIT busy: its compiles follow the
# requests served, and the rate stays below steady state for over a minute on one core. Shorter
# rounds end the warm-up as soon as it settles, and within about 45 s when it does not (the
# results record which). Two rounds must agree within 5%, not the default 10%: 3-s rounds of a
# server still compiling once agreed within 10% at a third of the steady rate.
ECHO_WARMUP_ROUND_SECONDS = 3
ECHO_WARMUP_MAX_ROUNDS = 12
ECHO_WARMUP_SETTLED = 0.05
# Little's law check: c must lie within X * [lowest, highest possible mean latency], widened by this.
LITTLE_TOLERANCE = 0.10
# The fixed-service sweep goes up to this many times the pool size (well past the knee).
FIXED_LADDER_FACTOR = 8
# Seconds of load per fixed-service step, and per open-loop step (two per rate: 6 x 3 s).
FIXED_STEP_SECONDS = 3
# A fixed-service step's calibration round: at c=1 (50 req/s) 100 requests, about 170 ms of CPU
# (17 of /proc's 10-ms ticks).
FIXED_CALIBRATION_SECONDS = 2
OPEN_LOOP_SECONDS = 3
# Offered rates of the open-loop check, as fractions of the fixed endpoint's capacity.
OPEN_LOOP_FRACTIONS = (0.5, 0.9, 1.2)
# How requests arrive in the open loop (scripts/openload --arrivals), each measured at every rate:
# at random like independent users (Poisson), and evenly spaced (a load no crowd makes).
OPEN_LOOP_ARRIVALS = ("poisson", "even")
# The Poisson draw (openload --seed): fixed, so a run repeats the same schedule.
OPEN_LOOP_SEED = 1
# Open loop: the most requests in flight the generator may hold (its file descriptors).
OPEN_LOOP_MAX_IN_FLIGHT = 4000
# Echo steps above this concurrency watch the server's listen queue (pul.listenq): past the
# default run's top, where `--max-concurrency 10000` meets the accept backlog.
WATCH_QUEUE_ABOVE = 1024


# ANCHOR: queueing
def erlang_c(servers: int, load: float) -> float:
    """Erlang's C formula: the chance that an arrival must wait, in an M/M/m queue with `servers`
    servers offered `load` = rate x service time (Erlang B by its recurrence, then C from B)."""
    utilisation = load / servers
    if utilisation >= 1:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    return b / (1 - utilisation * (1 - b))


def wait_mmc(rate: float, service_s: float, servers: int) -> float:
    """Mean wait in the queue (seconds) of M/M/m: C(m, a) / (m / S - lambda), m lanes (`servers`)
    of service time S; infinite at or past capacity."""
    capacity = servers / service_s
    if rate >= capacity:
        return math.inf
    return erlang_c(servers, rate * service_s) / (capacity - rate)


def wait_mdc(rate: float, service_s: float, servers: int) -> float:
    """Mean wait in the queue (seconds) of M/D/m: Poisson arrivals, a constant service time.

    The approximation Wq(M/G/m) ~ (ca^2 + cs^2) / 2 x Wq(M/M/m) (Whitt 1993, "Approximations for the
    GI/G/m queue", Production and Operations Management 2(2)), with ca^2 = 1 for Poisson arrivals and
    cs^2 = 0 for a constant service: half the M/M/m wait. Exact for one server (Pollaczek-Khinchine:
    U S / (2 (1 - U)), U the utilisation); for several, close in heavy traffic, where the wait
    matters, and low in light traffic, where it is a small fraction of the service time
    (Cosmetatos 1975 refines it).
    """
    return wait_mmc(rate, service_s, servers) / 2
# ANCHOR_END: queueing


def open_loop_model(arrivals: str, rate: float, servers: int, service_ms: float, seconds: float) -> dict:
    """The queueing prediction for one open-loop step: mean wait and latency, and the model's name.

    Below capacity: Poisson arrivals on a constant service wait as M/D/m says; evenly spaced ones
    (D/D/m) never wait, since a lane is free again before its turn comes round. At or past capacity
    no steady state exists for either: the backlog grows by (rate - capacity) every second, so a
    request due t seconds in waits (rate / capacity - 1) x t, and over a run of T seconds the mean
    wait is (rate / capacity - 1) x T / 2: twice the run, twice the wait.
    """
    service_s = service_ms / 1000
    capacity = servers / service_s
    utilisation = rate / capacity
    if utilisation >= 1:
        wait_s, model = (utilisation - 1) * seconds / 2, "past capacity: the queue grows"
    elif arrivals == "poisson":
        wait_s, model = wait_mdc(rate, service_s, servers), f"M/D/{servers}"
    else:
        wait_s, model = 0.0, f"D/D/{servers}"
    return {"arrivals": arrivals, "utilisation": round(utilisation, 4), "queue_model": model,
            "predicted_wait_ms": round(wait_s * 1000, 3),
            "predicted_mean_ms": round(service_ms + wait_s * 1000, 3),
            "wait_grows": utilisation >= 1}


def fixed_road(lanes: int, work_ms: float) -> dict:
    """The fixed-service road's bounds: its capacity, m lanes / S (req/s), and its knee, c* = m."""
    return {"lanes": lanes, "work_ms": work_ms, "capacity": lanes / (work_ms / 1000), "knee": lanes}


def closed_loop(c: int, lanes: int, work_ms: float) -> dict:
    """The fixed road in a closed loop of c requests: throughput min(c, m) / S (req/s) and latency
    max(1, c / m) x S (ms): below the knee every request finds a lane, past it each waits for the
    ones ahead."""
    return {"requests_per_sec": min(c, lanes) / (work_ms / 1000), "latency_ms": max(1, c / lanes) * work_ms}


def past_capacity(rate: float, servers: int, service_ms: float, seconds: float, max_in_flight: int,
                  timeout_s: float) -> dict:
    """An open-loop step past the road's capacity, and how long such a run may last before the load
    generator's limits hide requests: the rate by which arrivals outrun the lanes (`excess`, req/s),
    the wait that a request due t seconds in has (`growth` x t: U - 1 seconds a second), the mean
    latency over the step (open_loop_model's), when the requests in flight (the lanes' plus the
    queue) reach `max_in_flight` (`cap_after_s`) and when the wait reaches `timeout_s`
    (`timeout_after_s`), and the most in flight by the step's end (`most_in_flight`)."""
    capacity = servers / (service_ms / 1000)
    excess = rate - capacity
    if excess <= 0:
        raise ValueError(f"{rate} req/s is not past the capacity of {servers} lanes of {service_ms:g} ms")
    growth = rate / capacity - 1
    return {"rate": rate, "capacity": capacity, "utilisation": rate / capacity, "excess": excess,
            "growth": growth, "seconds": seconds, "servers": servers, "service_ms": service_ms,
            "mean_ms": open_loop_model("poisson", rate, servers, service_ms, seconds)["predicted_mean_ms"],
            "max_in_flight": max_in_flight, "cap_after_s": (max_in_flight - servers) / excess,
            "timeout_s": timeout_s, "timeout_after_s": timeout_s / growth,
            "most_in_flight": servers + excess * seconds}


def ladder(top: int) -> list[int]:
    """1, 2, 4, ... up to top (top itself included when it is not a power of two)."""
    steps = [2 ** i for i in range(int(math.log2(top)) + 1)]
    return steps if steps[-1] == top else steps + [top]


class ConcurrencyHighway(Lab):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--max-concurrency", type=int, default=self.defaults["max_concurrency"], metavar="N",
                            help="top of the echo ladder 1, 2, 4, ... (default %(default)s; up to ab's own "
                                 "limit, e.g. 10000 for the write-up's largest step)")
        parser.add_argument("--step-seconds", type=int, default=self.defaults["step_seconds"], metavar="S",
                            help="seconds at most per echo step (ab -t; default %(default)s)")
        parser.add_argument("--payload", choices=("small", "large"), default=self.defaults["payload"],
                            help="JSON body: small (~190 bytes, like the write-up's) or large (~13 KB)")

    def params(self, options: argparse.Namespace) -> dict:
        params = super().params(options)
        # ab refuses a concurrency above its MAX_CONCURRENCY; the installed ab says which.
        if params["max_concurrency"] > 20_000 and params["max_concurrency"] > (limit := ab_max_concurrency()):
            raise UsageError(f"--max-concurrency must be at most {limit} (the installed ab's limit)")
        return params

    def steps(self, params: dict) -> list[Step]:
        payload = params["payload"]
        steps = []
        echo_warmup_at = min(8, params["max_concurrency"])
        for c in ladder(params["max_concurrency"]):
            steps.append(Step(
                name=f"c={c}", endpoint="echo", concurrency=c,
                requests=max(params["requests"], REQUESTS_PER_CONCURRENCY * c),
                # One warm-up (repeated until it settles) for the whole sweep, at c=8; every step
                # then gets one calibration round at its own concurrency (pul.run.calibration),
                # right before its measured run.
                warmup_requests=max(params["requests"], 4000) if c == echo_warmup_at else 0,
                warmup_seconds=ECHO_WARMUP_ROUND_SECONDS, warmup_max_rounds=ECHO_WARMUP_MAX_ROUNDS,
                warmup_settled=ECHO_WARMUP_SETTLED,
                calibration_requests=max(CALIBRATION_REQUESTS, 2 * c),
                calibration_rounds=CALIBRATION_ROUNDS, remeasure_drift=REMEASURE_DRIFT,
                watch_listen_queue=c > WATCH_QUEUE_ABOVE,
                extra={"sweep": "echo", "payload": payload,
                       "bench_env": {"PAYLOAD": payload, "TIME_LIMIT": str(params["step_seconds"])}}))
        capacity = fixed_road(params["pool_size"], params["work_ms"])["capacity"]
        fixed_top = min(params["max_concurrency"], FIXED_LADDER_FACTOR * params["pool_size"])
        for c in ladder(fixed_top):
            rate = closed_loop(c, params["pool_size"], params["work_ms"])["requests_per_sec"]
            steps.append(Step(
                name=f"fixed-c={c}", endpoint="fixed", concurrency=c,
                requests=max(100, REQUESTS_PER_CONCURRENCY * c, round(rate * FIXED_STEP_SECONDS)),
                pool="lanes", service_ms=params["work_ms"],
                warmup_requests=400 if c == ladder(fixed_top)[-1] else 0,
                # Up to the lanes, every car is in service: each waits work_ms and then uses the
                # core, so the server's CPU per request enters the prediction (a round of its own at
                # this concurrency). Past them the lanes bind, far below the core.
                calibrate=c <= params["pool_size"],
                calibration_requests=max(100, round(rate * FIXED_CALIBRATION_SECONDS)),
                extra={"sweep": "fixed", "payload": payload,
                       "bench_env": {"PAYLOAD": payload, "TIME_LIMIT": str(4 * FIXED_STEP_SECONDS + 10)}}))
        for fraction in OPEN_LOOP_FRACTIONS:
            rate = round(fraction * capacity)
            for arrivals in OPEN_LOOP_ARRIVALS:
                seed = {"seed": OPEN_LOOP_SEED} if arrivals == "poisson" else {}
                steps.append(Step(
                    # concurrency: only the cap on requests in flight; the load is the rate.
                    name=f"open-{arrivals}-rate={rate}", endpoint="fixed", concurrency=OPEN_LOOP_MAX_IN_FLIGHT,
                    requests=round(rate * OPEN_LOOP_SECONDS), pool="lanes", service_ms=params["work_ms"],
                    # The load is the rate: a closed-loop calibration round would not measure it.
                    warmup_requests=0, calibrate=False,
                    extra={"sweep": "open", "payload": payload, "offered_rate": rate,
                           "fraction_of_capacity": fraction, "seconds": OPEN_LOOP_SECONDS,
                           "arrivals": arrivals, **seed,
                           "bench_env": {"PAYLOAD": payload, "RATE": str(rate), "ARRIVALS": arrivals,
                                         "DURATION": str(OPEN_LOOP_SECONDS),
                                         **{k.upper(): str(v) for k, v in seed.items()}}}))
        return steps

    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        sweep_name = step.extra.get("sweep")
        if sweep_name == "echo":
            # Pure CPU: the driver's CPU bounds (pul.model), calibrated at this step's concurrency;
            # with few in flight, from the round trip in series up to the core's bound.
            return Prediction(None, "no bound of the lab's own: the echo's CPU",
                              facts=model.round_trip_facts(step.concurrency))
        if sweep_name == "open":
            threads = pools["pools"]["lanes"]["threads"]
            capacity = threads / (step.service_ms / 1000)
            rate = step.extra["offered_rate"]
            queue = open_loop_model(step.extra["arrivals"], rate, threads, step.service_ms, step.extra["seconds"])
            if queue["wait_grows"]:
                wait = (f"past capacity the wait grows by {rate / capacity - 1:.2f} s every second: "
                        f"mean {queue['predicted_wait_ms']:,.0f} ms over {step.extra['seconds']:g} s")
            else:
                wait = (f"{queue['queue_model']} at utilisation {queue['utilisation']:.0%}: mean wait "
                        + ("1/2 Wq(M/M/m) = " if step.extra["arrivals"] == "poisson" else "")
                        + f"{queue['predicted_wait_ms']:.2f} ms")
            # Two bounds of the lab's own: the offered rate, and the lanes (pul.model adds the CPU's).
            bounds = {"offered rate": float(rate), "threads": round(capacity, 1)}
            arithmetic = {"offered rate": f"offered {rate}/s; {wait}",
                          "threads": f"{threads} lanes / {step.service_ms:g} ms; {wait}"}
            bound_by = min(bounds, key=bounds.get)
            return Prediction(bounds[bound_by], arithmetic[bound_by], facts=queue, bound_by=bound_by,
                              bounds=bounds, arithmetic=arithmetic)
        prediction = super().predict(step, pools, params)
        if sweep_name == "fixed":
            # Cars below the lanes wait the same work_ms: they convoy at the server's core after
            # every pause (pul.model.CONVOY), a range from the convoy up to the smooth prediction.
            # A fresh machine ran fixed-c=2 and fixed-c=8 at 0.84 and 0.82 of c / work_ms, the
            # request's own CPU then left out of the model.
            prediction = replace(prediction, facts=model.in_lockstep(prediction.facts))
        return prediction
