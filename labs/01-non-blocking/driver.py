"""Lab 01: blocking work on Play's default dispatcher, and moved to a pool of its own."""

from __future__ import annotations

from pul.lab import Lab, Step

LANGUAGES = ("java", "scala")


class NonBlocking(Lab):
    def steps(self, params: dict) -> list[Step]:
        steps = []
        for language in LANGUAGES:
            for kind, pool in (("blocking", "default"), ("offloaded", "offload")):
                name = f"{language}-{kind}"
                steps.append(Step(name=name, endpoint=name, concurrency=params["concurrency"],
                                  requests=params["requests"], pool=pool, service_ms=params["work_ms"],
                                  probe="/status"))
        return steps
