"""Lab 06's book artifacts and summary lines, from a results file."""

from __future__ import annotations

import statistics

from pul import glance, model, report
from pul.claims import key as claims_key
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
        ("mean ms", lambda v: _fmt(v["mean_ms"], 1), True),
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


# -- what the chapter's claims read (pul.claims: lab06.facts.NAME) ------------------------

# A variant whose mean latency is under this share of its run's length: the requests a time-limited
# run leaves in flight at its end, which count in no latency, move its mean by a few percent only.
SHORT_LATENCY = 0.1


def littles_law(v: dict) -> float | None:
    """The requests in flight that the run's mean latency and throughput make by Little's law,
    as a share of those ab kept in flight: mean x req/s / concurrency. 1 where every request of the
    run counts; below 1 by the waits of the requests still in flight when ab stopped, which are in
    no latency (left_waiting_s)."""
    if not v.get("mean_ms") or not v.get("requests_per_sec") or not v.get("concurrency"):
        return None
    return v["mean_ms"] * v["requests_per_sec"] / 1000 / v["concurrency"]


def left_waiting_s(v: dict) -> float | None:
    """How long, on average, the requests still in flight when ab stopped had waited. Over the run,
    ab's `concurrency` requests in flight add up to concurrency x duration of waiting; the completed
    requests account for complete x mean of it, and the rest is the left-behind requests' (as many
    as ab kept in flight)."""
    if not v.get("complete") or not v.get("duration_s") or not v.get("concurrency") or v.get("mean_ms") is None:
        return None
    return (v["concurrency"] * v["duration_s"] - v["complete"] * v["mean_ms"] / 1000) / v["concurrency"]


def _medians(v: dict) -> dict:
    """The median over a variant's timeline samples of the JVM's platform threads and of every
    pool's gauges: jvm_threads_median_VARIANT, POOL_MEASURE_median_VARIANT (default_busy_median_default,
    connections_awaiting_median_jdbc_connections_4, ...), and the platform threads the JVM started
    during the run (threads_started_VARIANT). Nothing for a variant without a timeline."""
    timeline, name = v.get("timeline") or {}, claims_key(v["name"])
    found = {}
    threads = [x for x in timeline.get("jvm_threads", []) if x is not None]
    if threads:
        found[f"jvm_threads_median_{name}"] = statistics.median(threads)
    if timeline.get("jvm_threads_started") is not None:
        found[f"threads_started_{name}"] = timeline["jvm_threads_started"]
    for pool, measures in (timeline.get("pools") or {}).items():
        for measure in measures:
            values = report.timeline_samples(v, pool, measure)
            if values:
                found[f"{claims_key(pool)}_{measure}_median_{name}"] = statistics.median(values)
    return found


def facts(results: dict, lab) -> dict:
    """What the chapter's claims read of a run beyond its records: per variant, Little's law on its
    latency (littles_law_VARIANT, left_waiting_s_VARIANT), the most JVM threads its footprint saw
    (threads_max_VARIANT) and its timeline's medians (_medians); over the variants whose mean latency
    is under SHORT_LATENCY of their run, how many (short_latency_variants, of variants) and their
    least and greatest littles_law (littles_law_short_min, littles_law_short_max); and the variant
    whose server spent the most CPU per request (most_cpu_per_request, its name)."""
    values = {"variants": len(results["variants"])}
    short = []
    for v in results["variants"]:
        name = claims_key(v["name"])
        ratio, left = littles_law(v), left_waiting_s(v)
        if ratio is not None:
            values[f"littles_law_{name}"] = round(ratio, 4)
            if v.get("duration_s") and v["mean_ms"] < SHORT_LATENCY * 1000 * v["duration_s"]:
                short.append(ratio)
        if left is not None:
            values[f"left_waiting_s_{name}"] = round(left, 3)
        if v.get("footprint"):
            values[f"threads_max_{name}"] = v["footprint"]["threads_max"]
        values.update(_medians(v))
    values["short_latency_variants"] = len(short)
    if short:
        values.update(littles_law_short_min=round(min(short), 4), littles_law_short_max=round(max(short), 4))
    costs = [v for v in results["variants"] if v.get("server_cpu_ms_per_request") is not None]
    if costs:
        values["most_cpu_per_request"] = max(costs, key=lambda v: v["server_cpu_ms_per_request"])["name"]
    return values


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


# -- "At a glance" (book/src/at-a-glance.md): this lab's rules, each worked on its run ------------

def glance_virtual_threads(lab06: glance.Run) -> str:
    """No threads' bound on virtual threads; k carriers ÷ S when pinned; N ÷ S on a pool of connections."""
    parts = []
    virtual, pinned, jdbc = (lab06.variant(name) for name in ("virtual", "synchronized-jdk21", "jdbc-connections=4"))
    if virtual:
        bounds = virtual.get("bounds") or {}
        rate, c, service = virtual["requests_per_sec"], virtual["concurrency"], glance.shown(virtual["service_ms"] / 1000, 3)
        parts.append(f"{glance.run_line(lab06)}, `virtual`: *c* ÷ *S* = {c} ÷ {service:.3f} s = {glance.rate(c / service)}"
                     + (f" and the core's *k* ÷ *D* = {glance.rate(bounds[model.SERVER_CPU])}"
                        if bounds.get(model.SERVER_CPU) else "")
                     + f"; it served {glance.rate(rate)}, no pool of threads in the way.")
    if pinned:
        carriers = (pinned.get("extra") or {}).get("carriers") or pinned.get("pool_threads")
        service = glance.shown(pinned["service_ms"] / 1000, 3)
        parts.append(f"`synchronized-jdk21`, pinned on Java 21: {carriers} carrier{'' if carriers == 1 else 's'} "
                     f"÷ *S* = {carriers} ÷ {service:.3f} s = {glance.rate(carriers / service)}; it served "
                     f"{pinned['requests_per_sec']:,.1f} req/s. " + pinned_latency(pinned))
    if jdbc:
        connections = (jdbc.get("extra") or {}).get("connections")
        service = glance.shown(jdbc["service_ms"], 1)
        if connections:
            parts.append(f"`jdbc-connections={connections}`: *N* ÷ *S* = {connections} ÷ {glance.ms(service, 1)} = "
                         f"{glance.rate(connections * 1000 / service)}; it served {glance.rate(jdbc['requests_per_sec'])}.")
    if not parts:
        return glance.missing(lab06, "virtual", "synchronized-jdk21", "jdbc-connections=4")
    return " ".join(parts) + "\n"


# ab's mean latency is short of Little's law's c ÷ λ by more than this share when the requests it
# left in flight at the end of its run (whose waits it never times) held much of the run's waiting.
SHORT_MEAN = 0.9


def pinned_latency(v: dict) -> str:
    """W of a pinned step by Little's law, c ÷ λ; and why ab's mean falls short of it, where it does:
    ab times only the requests that finished before its run ended, and the c it left in flight had
    waited too (chapter 6, "The pinned row's latency")."""
    c, rate = v["concurrency"], glance.shown(v["requests_per_sec"], 1)
    little_s = c / rate
    text = f"By Little's law *W* = *c* ÷ *λ* = {c} ÷ {rate:,.1f}/s = {little_s:.2f} s"
    if v.get("mean_ms") is None:
        return text + "."
    if v["mean_ms"] / 1000 >= SHORT_MEAN * little_s:
        return text + f", and `ab` timed a mean of {glance.ms(v['mean_ms'], 0)}."
    left_s = left_waiting_s(v)
    return (text + f"; `ab`'s mean, {glance.ms(v['mean_ms'], 0)}, is shorter because it times only the requests "
            f"that finished before its run did, not the {c} it left in flight"
            + (f", which had waited {left_s:.1f} s each on average when it stopped" if left_s else "") + ".")


# The page's rules this lab's run works (pul.glance: book/src/generated/at-a-glance-NAME.md).
GLANCE = {
    "virtual-threads": glance_virtual_threads,
}
