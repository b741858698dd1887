"""Lab 02's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import statistics

from pul import report
from pul.claims import key as claims_key
from pul.results import machine_line, markdown_table

from .driver import COMMON_PARALLELISM, JVM_DEFAULT


def summary_notes(results: dict) -> list[str]:
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
    sentence = cpu_sentence(by_name.get(JVM_DEFAULT), by_name.get("custom-ec"))
    if sentence:
        notes.append(sentence)
    notes += [sentence for sentence in map(report.bound_sentence, results["variants"]) if sentence]
    return notes + report.timeline_notes(results)


def compiler_ms_per_request(v: dict) -> float | None:
    """The JIT compiler threads' part of a variant's server CPU per request: their share of a
    core during the measured run (jit_share) spread over the requests served in it."""
    if v.get("jit_share") is None or not v.get("requests_per_sec"):
        return None
    return v["jit_share"] * 1000 / v["requests_per_sec"]


def cpu_sentence(v: dict | None, reference: dict | None) -> str | None:
    """A variant's server CPU per request against a reference's, with and without the JIT
    compiler's part (a variant on a fresh server pays for compiling again)."""
    if not (v and reference) or None in (v.get("server_cpu_ms_per_request"),
                                         reference.get("server_cpu_ms_per_request")):
        return None
    a, b = v["server_cpu_ms_per_request"], reference["server_cpu_ms_per_request"]
    sentence = (f"{v['name']}: the server spent {a:.2f} ms of CPU per request, against {b:.2f} ms for "
                f"{reference['name']} ({a / b:.1f}x)")
    a_jit, b_jit = compiler_ms_per_request(v), compiler_ms_per_request(reference)
    if a_jit is None or b_jit is None:
        return sentence + "."
    return (sentence + f"; the JIT compiler's threads took {a_jit:.2f} and {b_jit:.2f} ms of that, which "
            f"leaves {a - a_jit:.2f} and {b - b_jit:.2f} ms ({(a - a_jit) / (b - b_jit):.1f}x).")


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read of a run beyond its records (pul.claims: lab02.facts.NAME): how
    many variants have a predicted range (predicted_ranges: a convoy's floor up to the smooth
    prediction), each variant's timeline (timeline_facts) and the committed --profile run's table
    (profile_facts)."""
    values = {"predicted_ranges": sum(v.get("predicted_upper_requests_per_sec") is not None
                                      for v in results["variants"])}
    values.update(timeline_facts(results))
    values.update(profile_facts(lab))
    return values


def timeline_facts(results: dict) -> dict:
    """The median and the greatest value over each variant's timeline samples of every pool's
    gauges, as the timeline figure draws them: POOL_MEASURE_median_VARIANT and
    POOL_MEASURE_max_VARIANT (default_busy_median_blocking, offload_busy_max_custom_ec, ...)."""
    found = {}
    for v in results["variants"]:
        for pool, measures in ((v.get("timeline") or {}).get("pools") or {}).items():
            for measure in measures:
                values = report.timeline_samples(v, pool, measure)
                if values:
                    name = f"{claims_key(pool)}_{measure}"
                    found[f"{name}_median_{claims_key(v['name'])}"] = statistics.median(values)
                    found[f"{name}_max_{claims_key(v['name'])}"] = max(values)
    return found


def render(results: dict, lab) -> dict[str, str]:
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
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab02-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab02-table.md": table,
        "book/src/generated/lab02-variants.md": "\n".join(how_rows) + "\n",
        "book/src/generated/lab02-pools.md": "\n".join(pool_rows) + "\n",
        "book/src/generated/lab02-summary.md": summary,
        "book/src/figures/lab02-throughput.svg": throughput_figure(results),
        "book/src/figures/lab02-timeline.svg": timeline_figure(results),
        **profile_outputs(lab, results),
    }


def timeline_figure(results: dict) -> str:
    """Where each variant's work waited: the default dispatcher, the common pool, the offload pool."""
    return report.timeline_svg(
        results, ["blocking", "commonpool", "default-ec", "custom-ec"],
        [("default", "busy", "default dispatcher: busy"), ("default", "threads", "default dispatcher: threads"),
         ("default", "queued", "default dispatcher: queued tasks"),
         ("commonpool", "busy", "common pool: busy"), ("commonpool", "queued", "common pool: queued tasks"),
         ("offload", "busy", "offload pool: busy"), ("offload", "threads", "offload pool: threads")],
        "Lab 02: the pools while each variant ran (sampled 20 times a second)")


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 02: {params['work_ms']} ms of blocking work per request, "
                 f"{params['concurrency']} requests in flight", width=820)


# -- where the CPU goes, and where a profiler cannot look (the committed --profile run) ---

# A new thread per task against a pool of them; the chapter's flame graph is the first.
PROFILED = ["commonpool-jvm-default", "custom-ec"]
FLAME_GRAPH = "commonpool-jvm-default"
PROFILE_COLUMNS = [
    ("the request's task (work/)", lambda f: f.startswith("work/")),
    ("CompletableFuture", lambda f: f.startswith("java/util/concurrent/CompletableFuture")),
    ("a thread starting (Thread.start)", lambda f: f.startswith("java/lang/Thread.start")),
    ("Play's server", lambda f: f.startswith("play/core/server/")),
]


# The facts' names of PROFILE_COLUMNS' shares, in the same order (profile_NAME_SETUP).
PROFILE_COLUMN_FACTS = ["task", "completable_future", "thread_start", "play_server"]
# The threads the profile groups, whose share of the samples the chapter reads: the thread-per-task
# executor's, and Play's default dispatcher's (profile_NAME_SETUP).
PROFILE_POOL_FACTS = {"thread_per_task": "[Thread-N]",
                      "default_dispatcher": "[application-akka.actor.default-dispatcher-N]"}


def profile_facts(lab) -> dict:
    """What the chapter reads of the committed --profile run's table, per PROFILED set-up: its
    throughput (profile_requests_per_sec_SETUP), server CPU per request (profile_cpu_ms_SETUP), the
    JIT's share of the core (profile_jit_share_SETUP), its samples (profile_samples_SETUP), each
    column's share of them (profile_thread_start_SETUP, ...) and the share of samples on the threads
    started per task and on the default dispatcher's (PROFILE_POOL_FACTS). Empty without a profiled
    run."""
    found = {}
    for name, (v, shares) in report.profile_column_facts(lab, PROFILED, PROFILE_COLUMN_FACTS, PROFILE_COLUMNS).items():
        setup = claims_key(name)
        found[f"profile_requests_per_sec_{setup}"] = v["requests_per_sec"]
        found[f"profile_cpu_ms_{setup}"] = v["server_cpu_ms_per_request"]
        if v.get("jit_share") is not None:
            found[f"profile_jit_share_{setup}"] = v["jit_share"]
        found[f"profile_samples_{setup}"] = v["profile"]["samples"]
        found.update(shares)
        for fact, pool in PROFILE_POOL_FACTS.items():
            found[f"profile_{fact}_{setup}"] = sum(p["share"] for p in v["profile"].get("pools", [])
                                                   if p["pool"] == pool)
    return found


def profile_outputs(lab, main: dict) -> dict[str, str]:
    """The flame graph and the table of the committed --profile run (results/profile)."""
    run = report.profiled_run(lab)
    if run is None:
        return {}
    return {
        "book/src/generated/lab02-profile.md": report.profile_markdown(lab, run, PROFILED, PROFILE_COLUMNS, main),
        **report.flame_figures(lab, run, {"book/src/figures/lab02-flame.svg": FLAME_GRAPH}),
    }
