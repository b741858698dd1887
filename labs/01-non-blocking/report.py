"""Lab 01's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import re

from pul import report
from pul.results import machine_line, markdown_table

from .driver import LANGUAGES


def summary_notes(results: dict) -> list[str]:
    by_name = {v["name"]: v for v in results["variants"]}
    notes = []
    for language in LANGUAGES:
        blocking, offloaded = by_name.get(f"{language}-blocking"), by_name.get(f"{language}-offloaded")
        if blocking and offloaded:
            notes.append(f"{language}: offloading gave {offloaded['requests_per_sec'] / blocking['requests_per_sec']:.1f}x "
                         "the throughput of blocking on the default dispatcher.")
    for v in results["variants"]:
        if v["probe"]:
            notes.append(f"{v['name']}: /status answered in {v['probe']['p50_ms']:.1f} ms "
                         f"(p99 {v['probe']['p99_ms']:.1f} ms) while the load ran.")
    return notes


def render(results: dict, lab) -> dict[str, str]:
    table = markdown_table(results) + "\n" + machine_line(results) + "\n"
    probe_rows = ["| variant under load | /status p50 ms | /status p99 ms | /status max ms |",
                  "|:---|---:|---:|---:|"]
    for v in results["variants"]:
        if v["probe"]:
            p = v["probe"]
            probe_rows.append(f"| {v['name']} | {p['p50_ms']:.1f} | {p['p99_ms']:.1f} | {p['max_ms']:.1f} |")
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab01-table.md": table,
        "book/src/generated/lab01-status-table.md": "\n".join(probe_rows) + "\n",
        "book/src/generated/lab01-summary.md": summary,
        "book/src/figures/lab01-throughput.svg": throughput_figure(results),
        "book/src/figures/lab01-status-latency.svg": status_figure(results),
        # For the chapter "Measuring with ApacheBench": a real ab report and Little's law on it.
        "book/src/generated/lab01-ab-output.md": ab_output_example(results, lab.dir, "java-blocking"),
        "book/src/generated/lab01-littles-law.md": littles_law_table(results),
    }


def ab_output_example(results: dict, lab_dir, variant: str) -> str:
    """One variant's raw ab report from the committed run, as a text block."""
    record = next(v for v in results["variants"] if v["name"] == variant)
    text = (lab_dir / "results" / record["ab_output"]).read_text()
    # The percentile file's absolute path says where the run happened, not what it did.
    text = re.sub(r"-e \S*/", "-e ", text).rstrip("\n")
    return f"```text\n{text}\n```\n"


def littles_law_table(results: dict) -> str:
    """Little's law checked on each variant: lambda x W against ab's concurrency, and
    lambda x S (threads busy working) against the size of the pool the work ran on."""
    rows = ["| variant | λ (req/s) | W (s) | λ × W | c | S (s) | λ × S | N |",
            "|:---|---:|---:|---:|---:|---:|---:|---:|"]
    for v in results["variants"]:
        rate, latency, work = v["requests_per_sec"], v["mean_ms"] / 1000, v["service_ms"] / 1000
        rows.append(f"| {v['name']} | {rate:,.0f} | {latency:.4f} | {rate * latency:.1f} | {v['concurrency']} "
                    f"| {work:.3f} | {rate * work:.1f} | {v['pool_threads']} |")
    return "\n".join(rows) + "\n"


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 01: {params['work_ms']} ms of blocking work per request, "
                 f"{params['concurrency']} requests in flight")


def status_figure(results: dict) -> str:
    """How long a trivial /status took while each variant's load ran (log scale)."""
    probed = [v for v in results["variants"] if v["probe"]]
    data = "\n".join(f'"{v["name"]}" {v["probe"]["p50_ms"]:.2f} {v["probe"]["p99_ms"]:.2f}' for v in probed)
    script = report.svg_header() + f"""
set title "How long /status took while each variant was under load"
{report.CLUSTERED_BARS}set ylabel "milliseconds (log scale)"
set logscale y
set yrange [0.5:*]
set grid ytics
set key top right
$data << EOD
{data}
EOD
plot $data using 2:xtic(1) title "median" linecolor rgb "#2ca02c", \\
     '' using 3 title "99th percentile" linecolor rgb "#d62728"
"""
    return report.gnuplot_svg(script)
