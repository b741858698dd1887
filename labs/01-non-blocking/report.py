"""Lab 01's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import re

from pul import report
from pul.probe import SAMPLES_FOR_P99, describe_tail, probe_p99
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
        p = v["probe"]
        if p and p.get("p50_ms") is not None:
            notes.append(f"{v['name']}: /status answered in {p['p50_ms']:.1f} ms at the median, "
                         f"{describe_tail(p)}, while the load ran.")
        elif p:
            notes.append(f"{v['name']}: /status never answered while the load ran ({p['failed']:,} failed).")
    for language in LANGUAGES:
        sentence = cpu_sentence(language, by_name.get(f"{language}-blocking"), by_name.get(f"{language}-offloaded"))
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


def cpu_sentence(language: str, blocking: dict | None, offloaded: dict | None) -> str | None:
    """Blocking's server CPU per request against offloading's, with and without the JIT
    compiler's part: a variant measured while the compiler still works pays for it."""
    if not (blocking and offloaded) or None in (blocking.get("server_cpu_ms_per_request"),
                                                 offloaded.get("server_cpu_ms_per_request")):
        return None
    b, o = blocking["server_cpu_ms_per_request"], offloaded["server_cpu_ms_per_request"]
    sentence = (f"{language}: the server spent {b:.2f} ms of CPU per request blocking and {o:.2f} ms "
                "offloaded")
    b_jit, o_jit = compiler_ms_per_request(blocking), compiler_ms_per_request(offloaded)
    if b_jit is None or o_jit is None:
        return sentence + f" ({b / o:.1f}x)."
    b_net, o_net = b - b_jit, o - o_jit
    return (sentence + f" ({b / o:.1f}x); the JIT compiler's threads took {b_jit:.2f} and {o_jit:.2f} ms of that, "
            f"which leaves {b_net:.2f} and {o_net:.2f} ms ({b_net / o_net:.1f}x).")


def render(results: dict, lab) -> dict[str, str]:
    table = markdown_table(results) + "\n" + machine_line(results) + "\n"
    probe_rows = ["| variant under load | /status p50 ms | /status p99 ms | /status max ms | answered (n) |",
                  "|:---|---:|---:|---:|---:|"]
    for v in results["variants"]:
        if v["probe"]:
            p = v["probe"]
            answered = f"{p['requests']:,}" + (f" of {p['scheduled']:,}" if "scheduled" in p else "")
            probe_rows.append(f"| {v['name']} | {_ms(p.get('p50_ms'))} | {_ms(probe_p99(p))} "
                              f"| {_ms(p.get('max_ms'))} | {answered} |")
    probe_rows.append(f"\nA p99 is shown only from {SAMPLES_FOR_P99} answered probes; below that it would be "
                      "the maximum under another name.")
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab01-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab01-table.md": table,
        "book/src/generated/lab01-status-table.md": "\n".join(probe_rows) + "\n",
        "book/src/generated/lab01-summary.md": summary,
        "book/src/figures/lab01-throughput.svg": throughput_figure(results),
        "book/src/figures/lab01-status-latency.svg": status_figure(results),
        "book/src/figures/lab01-timeline.svg": timeline_figure(results),
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


def timeline_figure(results: dict) -> str:
    """The Java variants' pools over their measured runs: the default dispatcher held at its size
    while blocking, the offload pool holding the requests in flight when offloaded."""
    return report.timeline_svg(
        results, ["java-blocking", "java-offloaded"],
        [("default", "busy", "default dispatcher: busy"), ("default", "threads", "default dispatcher: threads"),
         ("default", "queued", "default dispatcher: queued tasks"),
         ("offload", "busy", "offload pool: busy"), ("offload", "threads", "offload pool: threads")],
        "Lab 01: the pools while each variant ran (sampled 20 times a second)")


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f}"


def status_figure(results: dict) -> str:
    """How long a trivial /status took while each variant's load ran (log scale): the median, the
    p99 where enough probes answered to carry one (a gap otherwise), and the maximum."""
    probed = [v for v in results["variants"] if v["probe"] and v["probe"].get("p50_ms") is not None]

    def row(v: dict) -> str:
        p, p99 = v["probe"], probe_p99(v["probe"])
        return (f'"{v["name"]} (n={p["requests"]})" {p["p50_ms"]:.2f} '
                f'{"?" if p99 is None else f"{p99:.2f}"} {p["max_ms"]:.2f}')
    data = "\n".join(row(v) for v in probed)
    script = report.svg_header() + f"""
set title "How long /status took while each variant was under load"
{report.CLUSTERED_BARS}set ylabel "milliseconds (log scale)"
set logscale y
set yrange [0.5:*]
set grid ytics
set key top right
set datafile missing "?"
$data << EOD
{data}
EOD
plot $data using 2:xtic(1) title "median" linecolor rgb "#2ca02c", \\
     '' using 3 title "99th percentile (from {SAMPLES_FOR_P99} answers)" linecolor rgb "#d62728", \\
     '' using 4 title "maximum" linecolor rgb "#7f7f7f"
"""
    return report.gnuplot_svg(script)
