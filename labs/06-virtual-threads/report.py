"""Lab 06's book artifacts and summary lines, from a results file."""

from __future__ import annotations

from pul import report
from pul.results import MODEL_COLUMNS, _fmt, machine_line, markdown_table


def _runtime(v: dict) -> str:
    return {"jdk21": "21", "jdk25": "25"}.get(v.get("runtime") or "", v.get("runtime") or "–")


def _threads(v: dict) -> str:
    """What the request held while it waited: a dispatcher's threads, carriers, or virtual threads."""
    if v["name"].startswith("jdbc-"):
        return f"{v['extra']['connections']} connections"
    if v.get("pool") == "virtual":
        return "virtual"
    return f"{v['pool_threads']} {v['pool']}" if v.get("pool_threads") is not None else "–"


def table_columns(results: dict):
    return [
        ("variant", lambda v: v["name"], False),
        ("Java", _runtime, True),
        ("c", lambda v: _fmt(v["concurrency"]), True),
        ("runs on", _threads, False),
        ("req/s", lambda v: _fmt(v["requests_per_sec"], 0), True),
        ("p50 ms", lambda v: _fmt(v["p50_ms"], 1), True),
        ("p99 ms", lambda v: _fmt(v["p99_ms"], 1), True),
        ("failed", lambda v: _fmt(v["failed"]), True),
        ("server CPU", lambda v: f"{v['server_cpu_utilization']:.0%}"
         if v.get("server_cpu_utilization") is not None else "–", True),
        *MODEL_COLUMNS,
    ]


def footprint_rows(results: dict) -> list[dict]:
    return [v for v in results["variants"] if v.get("footprint")]


def footprint_markdown(results: dict) -> str:
    rows = ["| variant | Java | c | req/s | JVM threads (max) | resident memory, MB (max) | median |",
            "|:---|---:|---:|---:|---:|---:|---:|"]
    for v in footprint_rows(results):
        f = v["footprint"]
        rows.append(f"| {v['name']} | {_runtime(v)} | {v['concurrency']:,} | {v['requests_per_sec']:,.0f} "
                    f"| {f['threads_max']:,} | {f['rss_max_mb']:,.0f} | {f['rss_median_mb']:,.0f} |")
    rows.append("\nThreads and resident memory are the server process's (`/proc/PID/status`: `Threads`, "
                "`VmRSS`), sampled five times a second during the measured run. A virtual thread is not "
                "a thread of the kernel: it runs mounted on a carrier, one of the JVM's platform threads. "
                "Every server has a 1 GiB heap (-Xms1g -Xmx1g).")
    return "\n".join(rows) + "\n"


def summary_notes(results: dict) -> list[str]:
    by_name = {v["name"]: v for v in results["variants"]}
    notes = []
    default, virtual = by_name.get("default"), by_name.get("virtual")
    if default and virtual:
        notes.append(f"virtual threads served {virtual['requests_per_sec'] / default['requests_per_sec']:.1f}x "
                     "the default dispatcher's throughput at the same load.")
    pinned, free = by_name.get("synchronized-jdk21"), by_name.get("synchronized-jdk25")
    if pinned and free:
        notes.append(f"`synchronized` around the blocking call: {pinned['requests_per_sec']:,.0f} req/s on Java 21 "
                     f"(pinned), {free['requests_per_sec']:,.0f} req/s on Java 25.")
    high = [v for v in results["variants"] if (v.get("extra") or {}).get("group") == "footprint" and v.get("footprint")]
    if high:
        notes.append(f"at c={high[0]['concurrency']:,}: " + "; ".join(
            f"{v['name']} {v['footprint']['threads_max']:,} JVM threads, {v['footprint']['rss_max_mb']:,.0f} MB resident"
            for v in high) + ".")
    notes += [sentence for sentence in map(report.bound_sentence, results["variants"]) if sentence]
    return notes + report.timeline_notes(results)


def throughput_figure(results: dict) -> str:
    params = results["params"]
    return report.measured_vs_predicted_svg(
        results, f"Lab 06: {params['work_ms']} ms of blocking work (jdbc: {params['query_ms']} ms in PostgreSQL) "
                 "per request")


def timeline_figure(results: dict) -> str:
    """A thousand in flight on the 100-thread pool and on virtual threads (no pool: the JVM's
    platform threads show their carriers), and virtual threads waiting for 4 connections."""
    high = results["params"]["high_concurrency"]
    return report.timeline_svg(
        results, ["default", f"pool-c={high}", f"virtual-c={high}", "jdbc-connections=4"],
        [("default", "busy", "default dispatcher: busy"), ("default", "queued", "default dispatcher: queued tasks"),
         ("pool", "busy", "100-thread pool: busy"), ("pool", "queued", "100-thread pool: queued tasks"),
         ("connections", "active", "connections: in use"),
         ("connections", "awaiting", "threads awaiting a connection"), ("jvm", "threads", "JVM platform threads")],
        "Lab 06: the pools while each variant ran (sampled 20 times a second)")


def footprint_figure(results: dict) -> str:
    """Threads and resident memory of each variant's server, two panels side by side."""
    rows = footprint_rows(results)
    data = "\n".join(f'"{v["name"]}" {v["footprint"]["threads_max"]} {v["footprint"]["rss_max_mb"]}' for v in rows)
    script = report.svg_header(height=440) + f"""
set multiplot layout 1,2 title "The server's footprint under load"
{report.CLUSTERED_BARS}set xtics rotate by -35
set grid ytics
set key off
set yrange [0:*]
$data << EOD
{data}
EOD
set title "JVM threads (max)"
plot $data using 2:xtic(1) linecolor rgb "#1f77b4"
set title "resident memory, MB (max)"
plot $data using 3:xtic(1) linecolor rgb "#ff7f0e"
unset multiplot
"""
    return report.gnuplot_svg(script)


def render(results: dict, lab) -> dict[str, str]:
    table = markdown_table(results, table_columns(results)) + "\n" + machine_line(results) + "\n"
    summary = "\n".join(f"- {note}" for note in summary_notes(results)) + "\n"
    return {
        "book/src/generated/lab06-bounds.md": report.bounds_markdown(results),
        "book/src/generated/lab06-table.md": table,
        "book/src/generated/lab06-footprint.md": footprint_markdown(results),
        "book/src/generated/lab06-summary.md": summary,
        "book/src/figures/lab06-throughput.svg": throughput_figure(results),
        "book/src/figures/lab06-footprint.svg": footprint_figure(results),
        "book/src/figures/lab06-timeline.svg": timeline_figure(results),
    }
