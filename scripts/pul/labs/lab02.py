"""Lab 02: which executor does my Java code run on? Five ways to run 30 ms of blocking work."""

from __future__ import annotations

from .. import report
from ..lab import Lab, Prediction, Step
from ..results import machine_line, markdown_table

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


class JavaAsync(Lab):
    OPTION_HELP = {
        **Lab.OPTION_HELP,
        "common_parallelism": ("ForkJoinPool.commonPool() parallelism for the five main variants, "
                               "i.e. the cores - 1 of the machine being modelled (3: a 4-core laptop)"),
    }

    def steps(self, params: dict) -> list[Step]:
        # The five variants share one server whose common pool is sized explicitly: the driver
        # pins the server to one core, where the JVM would choose parallelism 1 and
        # CompletableFuture would then not use the common pool at all (see JVM_DEFAULT).
        modelled = {COMMON_PARALLELISM: str(params["common_parallelism"])}
        steps = []
        for name, (pool, how) in VARIANTS.items():
            steps.append(Step(name=name, bench_variant=name,
                              concurrency=params["concurrency"], requests=params["requests"],
                              server_props=modelled, pool=pool, service_ms=params["work_ms"],
                              extra={"how": how}))
        steps.append(Step(name=JVM_DEFAULT, bench_variant="commonpool", concurrency=params["concurrency"],
                          requests=params["requests"], server_props={}, pool="commonpool",
                          service_ms=params["work_ms"],
                          extra={"how": "as commonpool, with the common pool sized by the JVM from the "
                                        "server's cores"}))
        return steps

    def predict(self, step: Step, pools: dict, params: dict) -> Prediction:
        """Little's law, where the common pool may be 'a new thread per task' (no bound)."""
        if step.pool == "commonpool":
            common = pools["pools"]["commonpool"]
            # Keep what the JVM really did with this server next to the measurement.
            step.extra.update({"common_pool_parallelism": common["parallelism"],
                               "completable_future_executor": common["executor"]})
            if common["threads"] is None:
                in_service = step.concurrency
                return Prediction(round(in_service / (step.service_ms / 1000.0), 1),
                                  f"parallelism {common['parallelism']}: a new thread per task, "
                                  f"so {step.concurrency} in flight / {step.service_ms:g} ms")
        prediction = super().predict(step, pools, params)
        if step.name == "ws":
            return Prediction(prediction.requests_per_sec,
                              f"no thread waits: {step.concurrency} in flight / "
                              f"{step.service_ms:g} ms downstream")
        return prediction

    def summary_notes(self, results: dict) -> list[str]:
        by_name = {v["name"]: v for v in results["variants"]}
        notes = []
        blocking = by_name.get("blocking")
        for name in ("commonpool", "default-ec", "custom-ec", "ws", JVM_DEFAULT):
            v = by_name.get(name)
            if blocking and v:
                notes.append(f"{name}: {v['requests_per_sec'] / blocking['requests_per_sec']:.2f}x "
                             "the throughput of blocking in the action.")
        for v in results["variants"]:
            if "completable_future_executor" in v["extra"]:
                notes.append(f"{v['name']}: common pool parallelism {v['extra']['common_pool_parallelism']}, "
                             f"so supplyAsync(work) ran on {v['extra']['completable_future_executor']}.")
        return notes

    def report(self, results: dict) -> dict[str, str]:
        table = markdown_table(results) + "\n" + machine_line(results) + "\n"
        how_rows = ["| variant | what it does | prediction (Little's law) |", "|:---|:---|:---|"]
        for v in results["variants"]:
            how_rows.append(f"| {v['name']} | {v['extra'].get('how', '')} | {v['prediction']} |")
        pools = results["pools"]
        pool_rows = ["| pool (from `/pools`) | executor | threads |", "|:---|:---|---:|"]
        for name, pool in pools["pools"].items():
            threads = "no bound" if pool["threads"] is None else str(pool["threads"])
            pool_rows.append(f"| {name} | {pool['executor']} | {threads} |")
        pool_rows.append("")
        cores = pools["available_processors"]
        pool_rows.append(f"The server saw {cores} available processor{'' if cores == 1 else 's'}; "
                         f"the common pool's parallelism was set to {results['params']['common_parallelism']} "
                         f"with `-D{COMMON_PARALLELISM}`.")
        summary = "\n".join(f"- {note}" for note in self.summary_notes(results)) + "\n"
        return {
            "book/src/generated/lab02-table.md": table,
            "book/src/generated/lab02-variants.md": "\n".join(how_rows) + "\n",
            "book/src/generated/lab02-pools.md": "\n".join(pool_rows) + "\n",
            "book/src/generated/lab02-summary.md": summary,
            "book/src/figures/lab02-throughput.svg": throughput_figure(results),
        }


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 02: {params['work_ms']} ms of blocking work per request, "
                 f"{params['concurrency']} requests in flight", width=820)


LAB = JavaAsync(
    number="02",
    title="Java async pitfalls",
    summary="Which executor does my Java code run on? 30 ms of blocking work five ways, plus Play WS.",
    defaults={"concurrency": 50, "requests": 2000, "pool_size": 100, "work_ms": 30, "common_parallelism": 3},
)
