"""Lab 02: which executor does my Java code run on? Five ways to run 30 ms of blocking work."""

from __future__ import annotations

import argparse
from dataclasses import replace

from pul import model
from pul.lab import Lab, Prediction, Step

# The JVM property that sizes ForkJoinPool.commonPool(); read once, at JVM start.
COMMON_PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism"

# Variant -> (the /pools entry whose threads bound it, or None; what the reader should know).
VARIANTS = {
    "blocking": ("default", "blocks in the action, on Play's default dispatcher"),
    "commonpool": ("commonpool", "supplyAsync(work) with no executor: ForkJoinPool.commonPool()"),
    "default-ec": ("default", "supplyAsync(work, ClassLoaderExecutionContext.current()): the default dispatcher again"),
    "custom-ec": ("offload", "supplyAsync(work, CustomExecutionContext): a pool sized for blocking"),
    "ws": (None, "Play WS call to a downstream that answers after the work time; no thread waits"),
}
# Extra: the commonpool variant on a server where the JVM sizes the common pool itself.
JVM_DEFAULT = "commonpool-jvm-default"
# A warm-up round: long enough for a couple of hundred requests at the slowest variant's rate.
WARMUP_SECONDS = 2
# The JVM-default server's warm-up rounds at most. A thread per request keeps its JIT compiler
# busy longest: with the compiler on both cores, still 63-77% busy after 7 rounds in one run
# (and settling to 25% by then in another), more than the other variants' 8 rounds leave.
JVM_DEFAULT_WARMUP_ROUNDS = 14


class JavaAsync(Lab):
    # Every request in service waits the same work_ms: the pauses of one core (a GC's, ab's fifty
    # connections at the start) wake them together, and they convoy at the server's CPU. A fresh
    # machine's custom-ec ran at 0.84 of the smooth prediction, its offload threads swinging
    # between all 50 and a handful busy: a range (pul.model.CONVOY), for every variant.
    LOCKSTEP = True
    OPTION_HELP = {
        **Lab.OPTION_HELP,
        "common_parallelism": ("ForkJoinPool.commonPool() parallelism for the five main variants, "
                               "i.e. the cores - 1 of the machine being modelled (3: a 4-core laptop)"),
    }

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--seconds", type=int, default=self.defaults["seconds"], metavar="S",
                            help="seconds each measured run lasts at most, whatever --requests says "
                                 "(default %(default)s)")

    def steps(self, params: dict) -> list[Step]:
        # The five variants share one server whose common pool is sized explicitly: the driver
        # pins the server to one core, where the JVM would choose parallelism 1 and
        # CompletableFuture would then not use the common pool at all (see JVM_DEFAULT).
        modelled = {COMMON_PARALLELISM: str(params["common_parallelism"])}
        steps = []
        for name, (pool, how) in VARIANTS.items():
            steps.append(Step(name=name, endpoint=name,
                              concurrency=params["concurrency"], requests=params["requests"],
                              seconds=params["seconds"], warmup_requests=params["requests"],
                              warmup_seconds=WARMUP_SECONDS,
                              setup=modelled, pool=pool, service_ms=params["work_ms"],
                              extra={"how": how}))
        steps.append(Step(name=JVM_DEFAULT, endpoint="commonpool", concurrency=params["concurrency"],
                          requests=params["requests"], seconds=params["seconds"],
                          warmup_requests=params["requests"], warmup_seconds=WARMUP_SECONDS,
                          warmup_max_rounds=JVM_DEFAULT_WARMUP_ROUNDS,
                          setup={}, pool="commonpool", service_ms=params["work_ms"],
                          extra={"how": "as commonpool, with the common pool sized by the JVM from the "
                                        "server's cores"}))
        return steps

    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Little's law, where the common pool may be 'a new thread per task' (no bound)."""
        if step.pool == "commonpool":
            common = pools["pools"]["commonpool"]
            # Keep what the JVM really did with this server next to the measurement.
            facts = {"common_pool_parallelism": common["parallelism"],
                     "completable_future_executor": common["executor"]}
            if common["threads"] is None:
                return Prediction(round(step.concurrency / (step.service_ms / 1000.0), 1),
                                  f"parallelism {common['parallelism']}: a new thread per task, "
                                  f"so {step.concurrency} in flight / {step.service_ms:g} ms",
                                  {**facts, **model.in_lockstep(model.loop_facts(step.concurrency,
                                                                                 step.service_ms))},
                                  bound_by="requests in flight")
            prediction = super().predict(step, pools, params)
            return replace(prediction, facts={**prediction.facts, **facts})
        prediction = super().predict(step, pools, params)
        if step.name == "ws":
            return replace(prediction, explanation=f"no thread waits: {step.concurrency} in flight / "
                                                   f"{step.service_ms:g} ms downstream")
        return prediction
