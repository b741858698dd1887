"""Lab 02's book artifacts and summary lines, from a results file."""

from __future__ import annotations

from pul import report
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
    notes += [sentence for sentence in map(report.bound_sentence, results["variants"]) if sentence]
    return notes


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
    }


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 02: {params['work_ms']} ms of blocking work per request, "
                 f"{params['concurrency']} requests in flight", width=820)
