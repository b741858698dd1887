"""Lab 05: the concurrency highway -- a ladder of concurrencies, Little's law, and an open-loop check.

Three sweeps against one server:
  c=N           the JSON echo (pure CPU on Play's default dispatcher) at c = 1, 2, 4, ... (ab, closed loop)
  fixed-c=N     the same echo behind a fixed service time on a fixed pool: capacity known in advance
  open-rate=R   the fixed endpoint at fixed request rates below, near and past its capacity (open loop)
"""

from __future__ import annotations

import argparse
import math

from pul.checks import ab_max_concurrency
from pul.errors import UsageError
from pul.lab import Lab, Prediction, Step

# Each step sends at least this many times c requests. A closed-loop run ends with a drain:
# the last c requests finish while no new ones start, which lowers the average number in
# flight by about c * R / (2 T) = c / (2 * this); at 10 the drain costs at most 5 %.
REQUESTS_PER_CONCURRENCY = 10
# Little's law check: c must lie within X * [lowest, highest possible mean latency], widened by this.
LITTLE_TOLERANCE = 0.10
# The fixed-service sweep goes up to this many times the pool size (well past the knee).
FIXED_LADDER_FACTOR = 8
# Seconds of load per fixed-service step, and per open-loop rate.
FIXED_STEP_SECONDS = 4
OPEN_LOOP_SECONDS = 5
# Offered rates of the open-loop check, as fractions of the fixed endpoint's capacity.
OPEN_LOOP_FRACTIONS = (0.5, 0.9, 1.2)
# Open loop: the most requests in flight the generator may hold (its file descriptors).
OPEN_LOOP_MAX_IN_FLIGHT = 4000


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
                # One warm-up (repeated until it settles) for the whole sweep, at c=8.
                warmup_requests=max(params["requests"], 4000) if c == echo_warmup_at else 0,
                extra={"sweep": "echo", "payload": payload,
                       "bench_env": {"PAYLOAD": payload, "TIME_LIMIT": str(params["step_seconds"])}}))
        capacity = params["pool_size"] / (params["work_ms"] / 1000)
        fixed_top = min(params["max_concurrency"], FIXED_LADDER_FACTOR * params["pool_size"])
        for c in ladder(fixed_top):
            rate = min(c, params["pool_size"]) / (params["work_ms"] / 1000)
            steps.append(Step(
                name=f"fixed-c={c}", endpoint="fixed", concurrency=c,
                requests=max(100, REQUESTS_PER_CONCURRENCY * c, round(rate * FIXED_STEP_SECONDS)),
                pool="lanes", service_ms=params["work_ms"],
                warmup_requests=400 if c == ladder(fixed_top)[-1] else 0,
                extra={"sweep": "fixed", "payload": payload,
                       "bench_env": {"PAYLOAD": payload, "TIME_LIMIT": str(4 * FIXED_STEP_SECONDS + 10)}}))
        for fraction in OPEN_LOOP_FRACTIONS:
            rate = round(fraction * capacity)
            steps.append(Step(
                # concurrency: only the cap on requests in flight; the load is the rate.
                name=f"open-rate={rate}", endpoint="fixed", concurrency=OPEN_LOOP_MAX_IN_FLIGHT,
                requests=round(rate * OPEN_LOOP_SECONDS), pool="lanes", service_ms=params["work_ms"],
                warmup_requests=0,
                extra={"sweep": "open", "payload": payload, "offered_rate": rate,
                       "fraction_of_capacity": fraction, "seconds": OPEN_LOOP_SECONDS,
                       "bench_env": {"PAYLOAD": payload, "RATE": str(rate),
                                     "DURATION": str(OPEN_LOOP_SECONDS)}}))
        return steps

    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        sweep_name = step.extra.get("sweep")
        if sweep_name == "echo":
            return Prediction(None, "echo: model drawn from the c=1 step (see the figures)")
        if sweep_name == "open":
            threads = pools["pools"]["lanes"]["threads"]
            capacity = threads / (step.service_ms / 1000)
            rate = step.extra["offered_rate"]
            return Prediction(round(min(rate, capacity), 1),
                              f"min(offered {rate}/s, {threads} lanes / {step.service_ms:g} ms)")
        return super().predict(step, pools, params)
