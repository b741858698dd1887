"""Lab 01: blocking work on Play's default dispatcher, and moved to a pool of its own."""

from __future__ import annotations

import argparse

from pul.lab import Lab, Step

LANGUAGES = ("java", "scala")
# A warm-up round: long enough for a few hundred requests at the blocking variants' rate.
WARMUP_SECONDS = 2


class NonBlocking(Lab):
    # 30 ms sleeps: the threads of either pool come back to the one core together (a range; on a
    # 2-core Intel Xeon java-blocking ran at 0.74-0.76 of 8 threads / 100 ms, using 5.6 ms of CPU
    # per request, inside its convoy's 55 req/s floor and its smooth end).
    LOCKSTEP = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--seconds", type=int, default=self.defaults["seconds"], metavar="S",
                            help="seconds each measured run lasts at most, whatever --requests says "
                                 "(default %(default)s: enough for 100 /status probes)")

    def steps(self, params: dict) -> list[Step]:
        steps = []
        for language in LANGUAGES:
            for kind, pool in (("blocking", "default"), ("offloaded", "offload")):
                name = f"{language}-{kind}"
                steps.append(Step(name=name, endpoint=name, concurrency=params["concurrency"],
                                  requests=params["requests"], seconds=params["seconds"], pool=pool,
                                  service_ms=params["work_ms"], probe="/status",
                                  warmup_requests=params["requests"], warmup_seconds=WARMUP_SECONDS))
        return steps
